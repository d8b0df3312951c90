package ucp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// TestIfaceEventsDrained: over rc, a failed endpoint leaves events in the
// iface's async event queue; the worker reads and acks them, so the
// queue does not grow with every failure.
func TestIfaceEventsDrained(t *testing.T) {
	nd := netnsWorld(t, "rma", Config{ErrorMode: ErrorModePeer, KeepaliveInterval: -1}, EnvErrMode+"=peer")
	ep := nd.eps[1]
	recvKeys(t, nd, 1)
	nd.must(nd.procs[1].Process.Kill())
	nd.progressUntil("the endpoint to fail", func() bool { return ep.Err() != nil })
	queued := func() int {
		n := 0
		for _, wi := range nd.w.ifaces {
			n += wi.it.Events().Len()
		}
		return n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for queued() > 0 || nd.w.evd.seen.Load() == 0 {
		if ctx.Err() != nil {
			t.Fatalf("%d events still queued (%d read by the worker) 10 s after the endpoint failed", queued(), nd.w.evd.seen.Load())
		}
		nd.w.Progress()
		time.Sleep(time.Millisecond)
	}
	// Closing the failed endpoint waits for no ack.
	done := make(chan struct{})
	go func() {
		defer close(done)
		nd.w.Close()
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("worker Close hung after its endpoint failed")
	}
}

// TestIfaceEventFailsEndpoint: the worker acts on what an event says. With
// the transport's error handler silenced, the endpoint-error event alone
// tells the worker that its rc peer died, and the endpoint fails.
func TestIfaceEventFailsEndpoint(t *testing.T) {
	nd := netnsWorld(t, "rma", Config{ErrorMode: ErrorModePeer, KeepaliveInterval: -1}, EnvErrMode+"=peer")
	ep := nd.eps[1]
	recvKeys(t, nd, 1)
	for _, wi := range nd.w.ifaces {
		wi.it.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	}
	nd.must(nd.procs[1].Process.Kill())
	nd.progressUntil("the endpoint to fail through its event", func() bool { return ep.Err() != nil })
	if !errors.Is(ep.Err(), uct.ErrPeerFailed) {
		t.Fatalf("endpoint error %v, want the event's uct.ErrPeerFailed", ep.Err())
	}
}
