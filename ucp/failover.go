package ucp

import (
	"errors"
	"fmt"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/internal/tsc"
	"github.com/ucgo/ucgo/uct"
)

// Failover: the entry points through which ucp learns that one lane of an
// endpoint broke (laneFault) or came back (laneUp), and the events it
// reports (SetFailoverHandler). With Config.Failover's Mode off, a lane
// fault fails the whole endpoint, as it always did.

// foEvents is the failover events of a worker: queued under the worker's
// lock, delivered from Progress with it released (as error handlers).
type foEvents struct {
	foHandler  func(failover.Event)
	foq        []foQueued // due
	foRun      []foQueued // taken by the running Progress
	foRunH     func(failover.Event)
	tscStarted bool // the time-stamp counter's rate is being measured
}

// foQueued is an event and its Detect in counter ticks (foDetect).
type foQueued struct {
	ev     failover.Event
	detect tsc.Ticks
}

// SetFailoverHandler installs h, called from Progress (without the
// worker's lock) for every failover event of the worker's endpoints: a
// lane failed and traffic moved to another (failover.FailedOver), moved
// back to a lane up again (FailedBack), or no lane was left and the
// endpoint failed (Exhausted). nil removes it.
func (w *Worker) SetFailoverHandler(h func(failover.Event)) {
	w.lock()
	defer w.unlock()
	w.foHandler = h
}

// foEvent queues ev for the handler (lock held).
func (w *Worker) foEvent(ev failover.Event) { w.foEventT(ev, 0) }

// foEventT queues ev, whose Detect is detect ticks when not zero.
func (w *Worker) foEventT(ev failover.Event, detect tsc.Ticks) {
	if w.foHandler == nil {
		return
	}
	w.foq = append(w.foq, foQueued{ev, detect})
	if w.asleep {
		w.Wake()
	}
}

// takeFoEvents moves the due events to the running Progress (lock held).
func (w *Worker) takeFoEvents() {
	if len(w.foq) == 0 {
		return
	}
	w.foRun, w.foq = append(w.foRun, w.foq...), w.foq[:0]
	w.foRunH = w.foHandler
}

// runFoEvents delivers the events taken by takeFoEvents (lock released,
// inside the one running Progress).
func (w *Worker) runFoEvents() int {
	n := len(w.foRun)
	if n == 0 {
		return 0
	}
	h := w.foRunH
	evs := w.foRun
	w.foRun, w.foRunH = nil, nil
	for _, q := range evs {
		if q.detect != 0 {
			q.ev.Detect = q.detect.Duration()
		}
		if h != nil {
			h(q.ev)
		}
	}
	return n
}

// foLane describes lane i of ep for failover.Policy and events.
func (ep *Endpoint) foLane(i int) failover.Lane {
	if i < 0 || i >= len(ep.lanes) {
		return failover.Lane{Index: i}
	}
	ln := &ep.lanes[i]
	l := failover.Lane{Index: i, Transport: ln.attr.Transport, Device: ln.attr.Device, Health: failover.Up}
	switch {
	case ln.health != nil:
		l.Health = ln.health.State()
	case ln.failed != nil || ln.ep == nil:
		l.Health = failover.Failed
	}
	return l
}

// foLanes describes every lane of ep.
func (ep *Endpoint) foLanes() []failover.Lane {
	ls := make([]failover.Lane, len(ep.lanes))
	for i := range ls {
		ls[i] = ep.foLane(i)
	}
	return ls
}

// otherLaneUp reports whether a lane of ep other than li carries traffic.
func (ep *Endpoint) otherLaneUp(li int) bool {
	for i := range ep.lanes {
		if i != li && ep.foLane(i).Health.Carries() {
			return true
		}
	}
	return false
}

// laneFault is the one place where ucp learns that lane li of ep broke
// with err (lock held): a failed post or completion, a keepalive check,
// an iface event naming the lane's endpoint, a link watcher or a missed
// probe. With failover off, or a status that failover.Policy refuses
// (a dead peer, a wrong call), or no other lane to move to, the
// endpoint fails with err as it always did. Otherwise the lane is
// marked failed and the endpoint's traffic moves to another lane
// (failOver). A lane whose work requests exceeded their retries while
// another lane of the endpoint still carries traffic has lost its route,
// not its peer: its cause becomes uct.ErrRouteLost.
func (w *Worker) laneFault(ep *Endpoint, li int, err error) {
	if ep.err != nil || ep.closed || err == nil {
		return
	}
	pol := &w.cfg.Failover
	if pol.Mode == failover.Off || li < 0 || li >= len(ep.lanes) {
		w.failEP(ep, err)
		return
	}
	ln := &ep.lanes[li]
	if ln.failed != nil {
		return // a straggler of a lane that failed already
	}
	if errors.Is(err, uct.ErrEndpointTimeout) && ep.otherLaneUp(li) {
		err = uct.NewOpError(ln.attr.Transport, "lane", ep.name, uct.ErrRouteLost,
			fmt.Errorf("lane %d: %w", li, err))
	}
	err = ep.nicCause(li, err)
	if !pol.ShouldFailOver(err) || !w.failOver(ep, li, err) {
		if pol.ShouldFailOver(err) {
			w.foEventT(failover.Event{Kind: failover.Exhausted, Endpoint: ep.name, From: ep.foLane(li), Cause: err,
				At: time.Now()}, w.foDetect(ep, li))
		}
		w.failEP(ep, err)
	}
}

// foDetect is how long lane li of ep had been silent when its fault was
// seen, in time-stamp counter ticks; runFoEvents converts it, after the
// counter's rate was measured off the failover's path (the first fault
// starts the measurement).
func (w *Worker) foDetect(ep *Endpoint, li int) tsc.Ticks {
	if !w.tscStarted {
		w.tscStarted = true
		go tsc.Calibrate()
	}
	if li < 0 || li >= len(ep.lanes) {
		return 0
	}
	ep.heardFold()
	last := ep.lanes[li].hd.last(&w.hr)
	if last == 0 {
		return 0
	}
	return tsc.Now() - last
}

// laneUp is told that lane li of ep, failed before, is healthy again:
// its probes are answered, or it was rebuilt after its link came back
// (lock held). With Policy.FailBack the endpoint's traffic moves back to
// it when it is the lane it prefers.
func (w *Worker) laneUp(ep *Endpoint, li int) {
	if ep.err != nil || ep.closed || li < 0 || li >= len(ep.lanes) || w.cfg.Failover.Mode == failover.Off {
		return
	}
	w.failBack(ep, li)
}

// opLane is the lane whose post failed for request r: the RMA lane of
// puts, gets and atomics, the AM lane of the rest.
func (ep *Endpoint) opLane(r *Request) int {
	switch r.kind {
	case kPut, kGet:
		return r.xlane
	case kAtomic, kAtomicFetch:
		return ep.rmaLane
	}
	return ep.amLane
}

// routeLost is told that a post on lane li of the sequenced endpoint ep
// was refused with err (lock held). A lane whose route is gone (its link
// is down: uct.ErrRouteLost) while another lane carries traffic is a
// lane fault: waiting for the route to come back would hold the
// endpoint's traffic for as long as the link stays down.
func (w *Worker) routeLost(ep *Endpoint, li int, err error) {
	if uct.StatusOf(err) == uct.ErrRouteLost && ep.otherLaneUp(li) {
		w.laneFault(ep, li, err)
	}
}
