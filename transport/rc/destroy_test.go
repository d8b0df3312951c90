package rc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// TestEndpointCloseWaitsForAcks: the event of a failed endpoint is owned
// by the endpoint, and the endpoint's Close returns only once that event,
// received, has been acked.
func TestEndpointCloseWaitsForAcks(t *testing.T) {
	mda, mdb := openLoopMD(t), openLoopMD(t)
	defer mda.Close()
	defer mdb.Close()
	a, b := openLoopIface(t, mda), openLoopIface(t, mdb)
	defer a.Close()
	a.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	ep, err := a.Connect(b.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	// The peer iface closes: our endpoint fails.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	var ev *uct.Event
	deadline := time.Now().Add(20 * time.Second)
	for ev == nil {
		if time.Now().After(deadline) {
			t.Fatal("no endpoint error event after the peer iface closed")
		}
		a.Progress()
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		e, err := a.Events().Get(ctx)
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
		case err != nil:
			t.Fatal(err)
		case e.Type == uct.EventEndpointError:
			ev = e
		default:
			e.Ack()
		}
	}
	if ev.Endpoint != ep || ev.Owner != ep {
		t.Fatalf("event %v: endpoint %p, owner %T; want the endpoint for both", ev, ev.Endpoint, ev.Owner)
	}
	// A canceled wait gives up at once, with a short error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ep.(*Endpoint).CloseContext(ctx); !errors.Is(err, uct.ErrTimedOut) || !errors.Is(err, context.Canceled) || len(err.Error()) > 200 {
		t.Fatalf("CloseContext with a canceled context: %v", err)
	}
	// Close again: it waits for the ack this time.
	done := make(chan error, 1)
	go func() { done <- ep.Close() }()
	select {
	case err := <-done:
		t.Fatalf("Close returned (%v) while its endpoint's event was not acked", err)
	case <-time.After(200 * time.Millisecond):
	}
	ev.Ack()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close after the ack: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return after the ack")
	}
}
