package ucp

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// An eager message that meets a posted receive completes it in the
// handler (doneInPlace) unless the receive needs more than its done mark:
// a callback still runs, a receive released before its message returns
// to the pool, and a thread-safe worker's receive completes through
// complete as before.
func TestEagerRecvInPlace(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     Config
		cb      bool // the receive has a callback
		release bool // released before the message is sent
	}{
		{"plain", Config{}, false, false},
		{"callback", Config{}, true, false},
		{"released", Config{}, false, true},
		{"threadsafe", Config{ThreadSafe: true}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws, ep := shmPair(t, c.cfg)
			rx := ws[1]
			out, in := pattern(8, 5), make([]byte, 8)
			calls := 0
			var p *Params
			if c.cb {
				p = &Params{Callback: func(*Request) { calls++ }}
			}
			r := rx.TagRecv(in, 9, exact, p)
			if r.Done() {
				t.Fatal("receive done before its message was sent")
			}
			rx.lock()
			free := len(rx.reqFree)
			rx.unlock()
			if c.release {
				r.Release()
			}
			s := ep.TagSend(out, 9, nil)
			deadline := time.Now().Add(20 * time.Second)
			arrived := func() bool {
				if !s.Done() {
					return false
				}
				if c.release {
					return bytes.Equal(in, out)
				}
				return r.Done() && (!c.cb || calls > 0)
			}
			for !arrived() {
				if time.Now().After(deadline) {
					t.Fatalf("no completion in 20 s (done %v, callback calls %d)", r.Done(), calls)
				}
				ws[0].Progress()
				rx.Progress()
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			s.Release()
			if !bytes.Equal(in, out) {
				t.Fatalf("received %x, want %x", in, out)
			}
			if c.release {
				rx.lock()
				n := len(rx.reqFree)
				rx.unlock()
				if n != free+1 {
					t.Fatalf("released receive not back in the pool: %d free requests, want %d", n, free+1)
				}
				return
			}
			if c.cb && calls != 1 {
				t.Fatalf("callback ran %d times, want 1", calls)
			}
			if err := r.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			if info := r.Info(); info.Length != 8 || info.Tag != 9 || info.Sender == nil {
				t.Fatalf("info %+v", info)
			}
			r.Release()
		})
	}
}
