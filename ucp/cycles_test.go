package ucp

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/uct"
)

// usage is what a process holds: open fds, goroutines, live heap.
type usage struct {
	fds, goroutines int
	heap            uint64
}

func (u usage) String() string {
	return fmt.Sprintf("%d fds, %d goroutines, %.1f MiB heap", u.fds, u.goroutines, float64(u.heap)/(1<<20))
}

// measure counts fds other than pipes (the test harness talks to child
// processes over pipes; the library opens none).
func measure(t testing.TB) usage {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	fds := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && !strings.HasPrefix(l, "pipe:") {
			fds++
		}
	}
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{fds: fds, goroutines: runtime.NumGoroutine(), heap: ms.HeapAlloc}
}

// settled measures until fds and goroutines are back to at most base's
// (background goroutines and fds of closed objects may take a moment to
// go), for at most 5 s, and returns the last measurement.
func settled(t testing.TB, base usage) usage {
	deadline := time.Now().Add(5 * time.Second)
	for {
		u := measure(t)
		if u.fds <= base.fds && u.goroutines <= base.goroutines || time.Now().After(deadline) {
			return u
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cycleTransports returns the transports of one side of a cycles test.
func cycleTransports(tr string) []uct.Component {
	if tr == "rc" {
		return []uct.Component{rc.New(rc.Config{Device: "lo", Addr: netip.MustParseAddr("127.0.0.1"), Port: -1})}
	}
	return []uct.Component{shm.New()}
}

// connectCycle opens a worker, connects it to v, exchanges eager and
// 2 MiB rendezvous messages both ways from fresh buffers, then closes
// both endpoints and the worker.
func connectCycle(t *testing.T, v *Worker, tr string, i int) {
	t.Helper()
	ctx, err := newContext(Config{Transports: cycleTransports(tr)}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	l, err := ctx.NewWorker()
	if err != nil {
		ctx.Close()
		t.Fatal(err)
	}
	lToV, err := l.Connect(v.Address(), EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	ws := []*Worker{v, l}
	var vToL *Endpoint
	for _, size := range []int{100, 2 << 20} {
		out := pattern(size, byte(i))
		in, back := make([]byte, size), make([]byte, size)
		r := v.TagRecv(in, uint64(size), exact, nil)
		s := lToV.TagSend(out, uint64(size), nil)
		spinAll(t, "message to the long-lived worker", ws, nil, func() bool { return r.Done() && s.Done() })
		vToL = r.Info().Sender
		rb := l.TagRecv(back, uint64(size), exact, nil)
		sb := vToL.TagSend(pattern(size, byte(i)), uint64(size), nil)
		spinAll(t, "message back", ws, nil, func() bool { return rb.Done() && sb.Done() })
		for _, q := range []*Request{r, s, rb, sb} {
			if q.Err() != nil {
				t.Fatalf("cycle %d size %d: %v", i, size, q.Err())
			}
			q.Release()
		}
		if !bytes.Equal(in, out) || !bytes.Equal(back, out) {
			t.Fatalf("cycle %d size %d: content differs", i, size)
		}
	}
	// The peer closes its endpoint and goes; over shm its close message
	// arrives first, over rc the worker may not hear of it: either way
	// the long-lived worker closes its endpoint too.
	c := lToV.Close(CloseFlush)
	spinAll(t, "close", ws, nil, c.Done)
	c.Release()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	c = vToL.Close(CloseForce)
	spinAll(t, "close of the peer's endpoint", ws[:1], nil, c.Done)
	c.Release()
}

// A long-lived worker that connects, exchanges messages and closes its
// endpoints many times holds no more fds, goroutines or heap than after
// the first cycles.
func TestCyclesConnectClose(t *testing.T) {
	for _, tr := range []string{"shm", "rc"} {
		t.Run(tr, func(t *testing.T) {
			const warm = 5
			n := 40
			if v, err := strconv.Atoi(os.Getenv("UCGO_CYCLES")); err == nil && v > 0 {
				n = v // more cycles, for a figure
			}
			ctx, err := newContext(Config{Transports: cycleTransports(tr)}, func(string) string { return "" })
			if err != nil {
				t.Skipf("%s: %v", tr, err)
			}
			defer ctx.Close()
			v, err := ctx.NewWorker()
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			for i := 0; i < warm; i++ {
				connectCycle(t, v, tr, i)
			}
			base := measure(t)
			for i := warm; i < warm+n; i++ {
				connectCycle(t, v, tr, i)
			}
			after := settled(t, base)
			t.Logf("after %d cycles: %v; after %d more: %v", warm, base, n, after)
			if after.fds > base.fds || after.goroutines > base.goroutines {
				t.Errorf("%d cycles left %d fds and %d goroutines behind", n, after.fds-base.fds, after.goroutines-base.goroutines)
			}
			if grew := int64(after.heap) - int64(base.heap); grew > 16<<20 {
				t.Errorf("%d cycles grew the heap by %.1f MiB", n, float64(grew)/(1<<20))
			}
		})
	}
}

// A worker whose peer process is killed, and which purges the endpoint
// and takes a new process at the same rank, many times over, holds no
// more fds, goroutines or heap than after the first cycles.
func TestCyclesKillPurge(t *testing.T) {
	const warm, n = 2, 12
	c := errCase{cfg: Config{ErrorMode: ErrorModePeer}}
	nd := tlsWorld(t, "shm", 2, "echo", c.cfg, c.env("shm")...)
	cycle := func() {
		errEcho(t, nd, 1, 4)
		ep := nd.eps[1]
		nd.kill(1)
		nd.progressUntil("the failure", func() bool { return ep.Err() != nil })
		nd.procs[1].Wait()
		nd.w.Purge(ep)
		nd.rejoin(t, 1, "echo", c.env("shm")...)
	}
	for i := 0; i < warm; i++ {
		cycle()
	}
	base := measure(t)
	for i := 0; i < n; i++ {
		cycle()
	}
	after := settled(t, base)
	t.Logf("after %d cycles: %v; after %d more: %v", warm, base, n, after)
	if after.fds > base.fds || after.goroutines > base.goroutines {
		t.Errorf("%d kill/purge cycles left %d fds and %d goroutines behind", n, after.fds-base.fds, after.goroutines-base.goroutines)
	}
	if grew := int64(after.heap) - int64(base.heap); grew > 16<<20 {
		t.Errorf("%d kill/purge cycles grew the heap by %.1f MiB", n, float64(grew)/(1<<20))
	}
	errEcho(t, nd, 1, 4)
	nd.quit(1)
	nd.exitOK(1)
}
