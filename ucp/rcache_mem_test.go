package ucp

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// collectedAtLeast runs the garbage collector until *n reaches want or
// 5 s passed, and returns *n.
func collectedAtLeast(n *atomic.Int64, want int64) int64 {
	deadline := time.Now().Add(5 * time.Second)
	for n.Load() < want && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	return n.Load()
}

// The registration cache keeps at most RcacheMax bytes of finished
// rendezvous buffers alive, and closing the endpoint releases the rest.
func TestRcacheReleasesBuffers(t *testing.T) {
	for _, scheme := range []RndvScheme{RndvGet, RndvPut} {
		t.Run([]string{"get", "put"}[scheme], func(t *testing.T) {
			const n, size = 40, 2 << 20
			ws, ep := shmPair(t, Config{RndvScheme: scheme})
			var collected atomic.Int64
			fixed := make([]byte, size)
			for i := 0; i < n; i++ {
				// a fresh buffer on the side that registers it
				fresh := pattern(size, byte(i))
				send, recv := fresh, fixed
				if scheme == RndvPut {
					send, recv = fixed, fresh
				}
				runtime.AddCleanup(&fresh[0], func(c *atomic.Int64) { c.Add(1) }, &collected)
				s := ep.TagSend(send, 7, nil)
				r := ws[1].TagRecv(recv, 7, exact, nil)
				spinAll(t, "rendezvous", ws[:], nil, func() bool { return s.Done() && r.Done() })
				if s.Err() != nil || r.Err() != nil {
					t.Fatalf("send %d: %v / %v", i, s.Err(), r.Err())
				}
				s.Release()
				r.Release()
			}
			kept := int64(defaultRcacheMax / size)
			if got := collectedAtLeast(&collected, n-kept); got < n-kept {
				t.Fatalf("%d of %d finished buffers collected, want at least %d (cache bound %d bytes)", got, n, n-kept, defaultRcacheMax)
			}
			var peerEP *Endpoint
			if scheme == RndvPut {
				ws[1].lock()
				peerEP = ws[1].live[0]
				ws[1].unlock()
			} else {
				peerEP = ep
			}
			c := peerEP.Close(CloseForce)
			spinAll(t, "close", ws[:], nil, c.Done)
			if got := collectedAtLeast(&collected, n); got != n {
				t.Fatalf("%d of %d buffers collected after the endpoint closed", got, n)
			}
		})
	}
}
