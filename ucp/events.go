package ucp

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/ucgo/ucgo/uct"
)

// eventDrain reads the async event queues of a worker's ifaces: one
// goroutine per iface waits in EventQueue.Get, acts on each event and
// acks it, so that no queue grows while the worker runs and no transport
// object waits on an ack in its Close.
type eventDrain struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	seen   atomic.Uint64
}

// startEventDrain starts the readers (after the ifaces are open).
func (w *Worker) startEventDrain() {
	ctx, cancel := context.WithCancel(context.Background())
	w.evd.cancel = cancel
	for _, wi := range w.ifaces {
		w.evd.wg.Add(1)
		go w.drainEvents(ctx, wi)
	}
}

// stopEventDrain stops the readers and waits for them. Events posted later
// stay queued, which does not hold up any Close: only events received and
// not acked do.
func (w *Worker) stopEventDrain() {
	if w.evd.cancel != nil {
		w.evd.cancel()
		w.evd.wg.Wait()
	}
}

func (w *Worker) drainEvents(ctx context.Context, wi *wiface) {
	defer w.evd.wg.Done()
	q := wi.it.Events()
	for {
		ev, err := q.Get(ctx)
		if err != nil {
			return // ctx canceled or the iface closed its queue
		}
		w.onEvent(wi, ev)
		ev.Ack()
	}
}

// onEvent acts on one async event (reader goroutine). An event that names
// an endpoint with an error fails that endpoint's lane as the error
// handler does (whichever comes first counts; the other finds the
// endpoint failed already). An iface-wide event is logged: the endpoints
// whose operations it breaks learn of it from their own operations and
// liveness checks.
func (w *Worker) onEvent(wi *wiface, ev *uct.Event) {
	w.evd.seen.Add(1)
	switch {
	case ev.Endpoint != nil && ev.Err != nil:
		w.onIfaceError(nil, ev.Endpoint, ev.Err)
	case ev.Err != nil:
		slog.Warn("ucp: iface event", "transport", wi.md.comp.Name(), "event", ev.Type.String(), "object", ev.Object, "err", ev.Err)
	default:
		slog.Debug("ucp: iface event", "transport", wi.md.comp.Name(), "event", ev.Type.String(), "object", ev.Object)
	}
}
