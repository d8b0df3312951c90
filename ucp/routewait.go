package ucp

import (
	"fmt"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// A lane whose link is down refuses posts with uct.ErrRouteLost, which
// is transient (retryLater): its requests wait, queued, for the link to
// come back. Operations in flight on it run out of their retries and
// fail the lane, but an endpoint with nothing in flight (its requests
// wait for the peer's answers, which cannot come either) would wait for
// ever. The keepalive round bounds the wait: a lane whose liveness
// check is refused for a lost route for longer than the endpoint's
// timeout (EPParams.Timeout; routeWaitDefault when unset) has failed
// with uct.ErrRouteLost (laneFault: failover moves the traffic, or
// without it the endpoint fails and every request completes).

// routeWaitDefault bounds a lost route when EPParams.Timeout is unset:
// the rc transport's default retry budget.
const routeWaitDefault = 3 * time.Second

// laneRoute is what a lane knows of its route (keepalive rounds).
type laneRoute struct {
	lostSince time.Time // the first round that found the route lost; zero while it is not
}

// routeWait is how long a lane of ep may stay without a route.
func (ep *Endpoint) routeWait() time.Duration {
	if ep.params.Timeout > 0 {
		return ep.params.Timeout
	}
	return routeWaitDefault
}

// routeCheck notes the status of lane li's liveness check (keepalive,
// lock held) and fails the lane when its route has been lost for longer
// than routeWait. It reports whether the status was a lost route.
func (w *Worker) routeCheck(ep *Endpoint, li int, err error, now time.Time) bool {
	ln := &ep.lanes[li]
	if err == nil || err == uct.ErrInProgress || uct.StatusOf(err) != uct.ErrRouteLost {
		ln.lostSince = time.Time{}
		return false
	}
	if ln.lostSince.IsZero() {
		ln.lostSince = now
		return true
	}
	if lost := now.Sub(ln.lostSince); lost >= ep.routeWait() {
		ln.lostSince = time.Time{}
		w.laneFault(ep, li, uct.NewOpError(ln.attr.Transport, "lane", ep.name, uct.ErrRouteLost,
			fmt.Errorf("lane %d: no route to the peer for %v: %w", li, lost.Round(time.Millisecond), err)))
	}
	return true
}
