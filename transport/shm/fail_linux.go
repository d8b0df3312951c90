package shm

import (
	"sync"

	"github.com/ucgo/ucgo/uct"
)

// epEvents serialises an endpoint's failure reports against its Close, so
// that no event names an endpoint whose Close has begun. Its zero value is
// ready to use.
type epEvents struct {
	mu      sync.Mutex // never held across the error handler
	closing bool
}

// fail puts the endpoint in error state with err, if it is in none and not
// closing, then runs the iface's error handler and, unless the handler or
// another goroutine closed the endpoint meanwhile, posts an event of type
// typ owned by the endpoint. The handler runs first: whoever receives the
// event knows that the handler has already seen the failure. The handler
// may close the endpoint.
func (ep *Endpoint) fail(typ uct.EventType, err error) {
	ep.ev.mu.Lock()
	if ep.ev.closing || !ep.err.CompareAndSwap(nil, &err) {
		ep.ev.mu.Unlock()
		return
	}
	ep.ev.mu.Unlock()
	ep.it.errh.Call(ep, err)
	ep.ev.mu.Lock()
	defer ep.ev.mu.Unlock()
	if ep.ev.closing {
		return
	}
	ep.it.events.Post(&uct.Event{Type: typ, Object: "ep " + ep.name, Owner: ep, Endpoint: ep, Err: err})
}

// beginClose marks the endpoint closing: failure reports that have not yet
// posted their event post none. An event posted before waits in the
// queue or with its receiver, where Close's WaitAcks finds it.
func (ep *Endpoint) beginClose() {
	ep.ev.mu.Lock()
	ep.ev.closing = true
	ep.ev.mu.Unlock()
}
