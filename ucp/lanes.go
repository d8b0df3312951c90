package ucp

import (
	"context"
	"fmt"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/uct"
)

// Lane choice: see laneset.go.

// connectLanes connects ep's lanes to the ifaces of a (lock held), by the
// rules of laneset.go. It returns the connection errors.
func (w *Worker) connectLanes(ep *Endpoint, a Address, p EPParams) []error {
	var errs []error
	shmc, netc, first := w.laneCands(a)
	for _, c := range shmc {
		if err := w.connectLane(ep, c, p, false); err != nil {
			errs = append(errs, err)
		}
	}
	standby := len(ep.lanes) > 0
	if standby && !w.standbyLanes() {
		return errs
	}
	if !first && len(netc) > 1 && w.cfg.Failover.Mode != failover.Off {
		return append(errs, w.connectRails(ep, netc, p, standby)...)
	}
	for _, c := range netc {
		if err := w.connectLane(ep, c, p, standby); err != nil {
			errs = append(errs, err)
			continue
		}
		if first {
			break
		}
	}
	return errs
}

// Iface activity. Progressing an iface costs at least a poll of its
// receive queue (a system call for rc), so Progress only polls every call
// the ifaces that carry an endpoint's AM or RMA lane, have delivered a
// message of the conversation, are cheap to poll (shared memory) or are
// the worker's only one; the others are polled every idlePollEvery calls
// (about a millisecond of a spinning loop), on the first call after a
// Wait and every quarter of a probe interval (keepaliveTimer), so that a
// connection request arriving on them is still seen and a probe crossing
// a lane standing by is answered, and its answer seen, within the round.
// A poll of an idle rc iface is a recvmmsg that a message arriving
// meanwhile on the busy lane waits for, so it must be rare. Control
// traffic (lane-bind, probes and their answers, keepalive, lone
// acknowledgements, lane status) leaves an iface idle: a lane standing by
// carries it all the time. On an iface that does not tell handlers a
// message's source (no bound handlers, setHandlers), any event marks it.
const idlePollEvery = 1 << 14

// ctlMsg says whether AM id is control traffic that leaves an idle iface
// idle.
func ctlMsg(id uint8) bool {
	switch id {
	case amKeepalive, amLaneBind, amProbe, amProbeRep, amSeqAck, amLaneStatus:
		return true
	}
	return false
}

// use marks wi as carrying traffic: Progress polls it on every call and
// Wait sleeps on it (any goroutine).
func (wi *wiface) use() {
	wi.used.Store(true)
	wi.active.Store(true)
}

// progressIfaces runs the transports' progress: the active ifaces, and
// the idle ones when their turn has come.
func (w *Worker) progressIfaces() int {
	n := 0
	idle := false
	for _, wi := range w.ifaces {
		if wi.active.Load() {
			n += wi.it.Progress()
		} else {
			idle = true
		}
	}
	if !idle {
		return n
	}
	if w.idleTick++; w.idleTick%idlePollEvery != 0 && !w.pollIdle.Load() {
		return n
	}
	w.pollIdle.Store(false)
	for _, wi := range w.ifaces {
		if !wi.active.Load() {
			k := wi.it.Progress()
			if _, bound := wi.it.(uct.AMSourceIface); k > 0 && !bound {
				wi.use()
			}
			n += k
		}
	}
	return n
}

// idleWaitSlice bounds a Wait on the one iface that carries traffic when
// the worker has others: after it the next Progress polls them.
const idleWaitSlice = 50 * time.Millisecond

// waitIfaces sleeps on the armed ifaces until one has an event or ctx
// ends.
func (w *Worker) waitIfaces(ctx context.Context) {
	defer w.pollIdle.Store(true)
	if len(w.ifaces) == 1 {
		w.ifaces[0].it.Wait(ctx)
		return
	}
	var act *wiface
	nact := 0
	for _, wi := range w.ifaces {
		if wi.used.Load() {
			act = wi
			nact++
		}
	}
	if nact == 1 {
		c, cancel := context.WithTimeout(ctx, idleWaitSlice)
		act.it.Wait(c)
		cancel()
		return
	}
	// Several ifaces (or none) carry traffic: sleep on each in turn for
	// a short slice.
	for _, wi := range w.ifaces {
		c, cancel := context.WithTimeout(ctx, time.Millisecond)
		wi.it.Wait(c)
		cancel()
		if ctx.Err() != nil {
			return
		}
	}
}

func errNoLane(errs []error) error {
	if len(errs) > 0 {
		return errs[0]
	}
	return fmt.Errorf("no common transport: %w", uct.ErrUnreachable)
}
