package rc

import (
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/ucgo/ucgo/uct"
)

// TestClosedEndpointNotRemembered: a send completion that no Notify took
// does not keep its endpoint (and its QP's buffers) alive once the
// endpoint is closed.
func TestClosedEndpointNotRemembered(t *testing.T) {
	p := loopPair(t)
	defer p.Cleanup()
	a, b := p.A.(*Iface), p.B
	b.SetAMHandler(1, func(any, []byte, uct.AMFlags) {}, nil)
	var wp weak.Pointer[Endpoint]
	func() {
		ue, err := a.Connect(b.Address(), uct.EPParams{})
		if err != nil {
			t.Fatal(err)
		}
		ep := ue.(*Endpoint)
		wp = weak.Make(ep)
		// The send completes in the iface when its ACK arrives (AMZcopy
		// itself returns at once), and that completion is remembered.
		for {
			err := ep.AMZcopy(1, []byte{1}, [][]byte{make([]byte, 64)}, nil)
			if err == nil || err == uct.ErrInProgress {
				break
			}
			if err != uct.ErrNoResource {
				t.Fatal(err)
			}
			a.Progress()
			b.Progress()
		}
		for deadline := time.Now().Add(20 * time.Second); a.notifier.Remembered() == 0; {
			if time.Now().After(deadline) {
				t.Fatal("the send completion was not remembered for Notify")
			}
			a.Progress()
			b.Progress()
		}
		if err := ep.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	for i := 0; i < 5 && wp.Value() != nil; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if wp.Value() != nil {
		t.Fatal("a closed endpoint is still referenced (by the notifier's remembered completions)")
	}
	if a.notifier.Remembered() == 0 {
		t.Fatal("closing the endpoint forgot its completions")
	}
}
