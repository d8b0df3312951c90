package ucp

import (
	"context"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/uct"
)

// waitCounter is an rc iface that counts the Waits made on it alone.
type waitCounter struct {
	*rc.Iface
	waits atomic.Int32
}

func (c *waitCounter) Wait(ctx context.Context) error {
	c.waits.Add(1)
	return c.Iface.Wait(ctx)
}

// TestWaitAllIfaces: a worker whose traffic runs over two rc ifaces
// sleeps on both in one poll, so an event on the second wakes it at
// once; it never sleeps on the first alone while the second has one.
func TestWaitAllIfaces(t *testing.T) {
	ts := []uct.Component{
		rc.New(rc.Config{Device: "lo", Addr: netip.MustParseAddr("127.0.0.1"), Port: -1}),
		rc.New(rc.Config{Device: "lo", Addr: netip.MustParseAddr("127.0.0.1"), Port: -1}),
	}
	ctx, err := newContext(Config{Transports: ts}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	w, err := ctx.NewWorker()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if len(w.ifaces) != 2 {
		t.Fatalf("%d ifaces, want 2", len(w.ifaces))
	}
	var cs [2]*waitCounter
	w.stopEventDrain() // its readers hold the ifaces being wrapped
	for i, wi := range w.ifaces {
		cs[i] = &waitCounter{Iface: wi.it.(*rc.Iface)}
		wi.it = cs[i]
		wi.use()
	}
	w.startEventDrain()
	for round := range 3 {
		cs[1].Wake() // the event, on the second iface
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := w.Wait(c)
		cancel()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if n := cs[0].waits.Load(); n != 0 {
			t.Fatalf("round %d: the worker slept %d times on the first iface alone while the second had an event", round, n)
		}
	}
}
