package shm

import (
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// TestPeerFailedHandlerBeforeEvent: the error handler has run by the time
// the peer-failed event can be received, however slow the handler is.
func TestPeerFailedHandlerBeforeEvent(t *testing.T) {
	_, it := openIface(t)
	var handled atomic.Int32
	it.SetErrorHandler(func(_ any, _ uct.Endpoint, err error) {
		time.Sleep(100 * time.Millisecond) // a handler that takes its time
		if errors.Is(err, uct.ErrPeerFailed) {
			handled.Add(1)
		}
	}, nil)
	victim := startChild(t, "echo")
	ep := victim.connect(t, it)
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ev, err := it.Events().Get(timeoutCtx(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Ack()
	if ev.Type != uct.EventPeerFailed || ev.Endpoint != ep {
		t.Fatalf("event %v", ev)
	}
	if n := handled.Load(); n != 1 {
		t.Fatalf("event received while the error handler had run %d times, want 1", n)
	}
}

// TestPeerFailedCloseRace: failure reports (the pidfd watcher and
// CheckLiveness) race with Close on many endpoints of one killed peer. No
// event may be left that names an endpoint whose Close has returned.
func TestPeerFailedCloseRace(t *testing.T) {
	_, it := openIface(t)
	it.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	victim := startChild(t, "echo")
	const n = 64
	eps := make([]uct.Endpoint, n)
	for i := range eps {
		ep, err := it.Connect(victim.addr, uct.EPParams{})
		if err != nil {
			t.Fatal(err)
		}
		eps[i] = ep
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	victim.cmd.Wait()
	var wg sync.WaitGroup
	for _, ep := range eps {
		wg.Add(2)
		go func() {
			defer wg.Done()
			ep.CheckLiveness(nil)
		}()
		go func() {
			defer wg.Done()
			if err := ep.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}()
	}
	wg.Wait()
	// Every endpoint is closed now; a late watcher report must not post.
	time.Sleep(50 * time.Millisecond)
	for {
		ev, ok := it.Events().TryGet()
		if !ok {
			break
		}
		ev.Ack()
		t.Errorf("event %v names an endpoint that is closed", ev)
	}
}
