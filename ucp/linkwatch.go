package ucp

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/uct"
)

// Device status and lanes. With failover on, the worker registers a
// device status watcher on each of its ifaces (uct.Iface.WatchDevice: rc
// follows its netdev over rtnetlink, and reports RDMA disabled; shm
// reports its device disabled). A watcher runs on the transport's
// goroutine: it only queues the change with the worker's async errors
// (the amu queue, as an iface error handler does) and wakes the worker;
// Progress acts on it with the worker's lock held:
//
//   - link down or RDMA disabled: every lane on that iface fails with
//     uct.ErrLocalNICFailed (laneFault). The peer is told first, over a
//     lane on another iface (amLaneStatus), so that its lanes to that
//     iface fail with uct.ErrRemoteNICFailed at once instead of after
//     their retries;
//   - usable again: each lane that failed so is rebuilt, a new uct
//     endpoint on that iface to the peer's address, bound again by a
//     lane-bind; a failover.Restored event reports it with cause
//     uct.ErrLocalNICReinit, laneUp is told, and the peer, told over
//     any lane, rebuilds its own lanes to that iface (cause
//     uct.ErrRemoteNICReinit). A rebuild that cannot connect yet is
//     tried again after the policy's backoff, up to its attempts.
//
// With failover off nothing is watched: a lane's own operations report a
// link down, as they always did.

// linkEvent is a change queued for Progress: our iface's device status
// (wi), or a peer's report about its iface ridx for ep (remote).
type linkEvent struct {
	wi     *wiface
	status uct.DeviceStatus
	at     time.Time
	try    int // rebuild attempts made

	ep   *Endpoint // remote: the endpoint whose peer reported
	ridx int
}

// linkWatches are the worker's device watchers.
type linkWatches struct {
	watches []*uct.Watch
	stopped atomic.Bool // Close deregistered the watchers: retries post nothing
	// linkSeen is when the watcher saw the last change Progress acted
	// on, linkActed when Progress acted on it (tests measure detection
	// with them).
	linkSeen, linkActed time.Time
}

// lane status reports (amLaneStatus).
const (
	laneStatusDown = 1
	laneStatusUp   = 2
)

// laneStatus is a peer's report that one of its ifaces (by index in its
// worker address) went down or came back.
type laneStatus struct {
	dst    uint32
	status uint8
	iface  uint8
}

const laneStatusLen = 4 + 1 + 1

func (m *laneStatus) encode(b []byte) []byte {
	b = le.AppendUint32(b[:0], m.dst)
	return append(b, m.status, m.iface)
}

func decodeLaneStatus(b []byte) (laneStatus, error) {
	if len(b) != laneStatusLen || b[4] != laneStatusDown && b[4] != laneStatusUp || int(b[5]) >= maxIfaces {
		return laneStatus{}, errWire("lane status")
	}
	return laneStatus{dst: le.Uint32(b), status: b[4], iface: b[5]}, nil
}

// watchLinks registers the watchers (NewWorker), with failover on.
func (w *Worker) watchLinks() {
	if w.cfg.Failover.Mode == failover.Off {
		return
	}
	for _, wi := range w.ifaces {
		wi := wi
		wt, err := wi.it.WatchDevice(func(e uct.DeviceStatusEvent) {
			w.postLink(&linkEvent{wi: wi, status: e.Status, at: time.Now()})
		})
		if err == nil {
			w.watches = append(w.watches, wt)
		}
	}
}

// unwatchLinks deregisters the watchers (Close).
func (w *Worker) unwatchLinks() {
	w.stopped.Store(true)
	for _, wt := range w.watches {
		wt.Close()
	}
	w.watches = nil
}

// postLink queues ev for Progress (any goroutine; takes amu only).
func (w *Worker) postLink(ev *linkEvent) {
	if w.stopped.Load() {
		return
	}
	w.amu.Lock()
	w.async = append(w.async, asyncErr{link: ev})
	w.asyncN.Add(1)
	w.amu.Unlock()
	w.Wake()
}

// rebuildAttempts bounds the attempts to rebuild the lanes of a device
// that came back: with the backoff doubling up to the policy's
// MaxBackoff, about two seconds of a peer that does not answer yet.
const rebuildAttempts = 24

// postLinkLater queues ev again after the policy's backoff for its
// attempt, unless its attempts are used up.
func (w *Worker) postLinkLater(ev *linkEvent, err error) {
	pol := &w.cfg.Failover
	if errors.Is(err, uct.ErrInProgress) {
		// a lane's connection waits for the peer (lanedial.go): not an
		// attempt; look again after the longest backoff
		time.AfterFunc(max(pol.MaxBackoff, pol.Backoff), func() { w.postLink(ev) })
		return
	}
	if ev.try >= max(pol.Attempts, rebuildAttempts) {
		slog.Warn("ucp: a lane of a device that came back could not be rebuilt", "attempts", ev.try, "err", err)
		return
	}
	slog.Debug("ucp: rebuilding a lane failed; trying again", "attempt", ev.try+1, "err", err)
	d := pol.Backoff << min(ev.try, 16)
	if pol.MaxBackoff > 0 && d > pol.MaxBackoff {
		d = pol.MaxBackoff
	}
	ev.try++
	time.AfterFunc(d, func() { w.postLink(ev) })
}

// onLink acts on a queued change (Progress, lock held).
func (w *Worker) onLink(ev *linkEvent) {
	if w.closed {
		return
	}
	if ev.ep != nil {
		w.remoteUp(ev)
		return
	}
	wi := ev.wi
	w.linkSeen, w.linkActed = ev.at, time.Now()
	if !ev.status.Usable() {
		if wi.linkDown {
			return
		}
		wi.linkDown = true
		w.localDown(wi, ev.status)
		return
	}
	if wi.linkDown && ev.try > 0 {
		return // a retry of a rebuild, but the device went down again
	}
	wi.linkDown = false
	w.localUp(ev)
}

// ifaceIndex is wi's index in the worker's address.
func (w *Worker) ifaceIndex(wi *wiface) int {
	for i, o := range w.ifaces {
		if o == wi {
			return i
		}
	}
	return -1
}

// localDown fails every lane on wi (lock held).
func (w *Worker) localDown(wi *wiface, st uct.DeviceStatus) {
	cause := fmt.Errorf("%s device %s: %v", wi.attr.Transport, wi.attr.Device, st)
	for _, ep := range append([]*Endpoint(nil), w.live...) {
		if ep.err != nil || ep.closed {
			continue
		}
		// every lane on wi is rebuilt when it comes back, also one that
		// failed already (its own operations may have told first)
		var lis []int
		marked := false
		for li := range ep.lanes {
			if ln := &ep.lanes[li]; ln.wi == wi && !ln.nicDown {
				ln.nicDown, marked = true, true
				if ln.ep != nil {
					lis = append(lis, li)
				}
			}
		}
		if !marked {
			continue
		}
		w.tellLaneStatus(ep, wi, laneStatusDown)
		for _, li := range lis {
			w.laneFault(ep, li, uct.NewOpError(wi.attr.Transport, "link", ep.name, uct.ErrLocalNICFailed, cause))
			if ep.err != nil {
				break
			}
		}
	}
}

// localUp rebuilds the lanes on ev.wi that its going down failed, and
// tells their peers (lock held).
func (w *Worker) localUp(ev *linkEvent) {
	wi := ev.wi
	var retry error
	for _, ep := range append([]*Endpoint(nil), w.live...) {
		if ep.err != nil || ep.closed {
			continue
		}
		rebuilt := false
		for li := range ep.lanes {
			ln := &ep.lanes[li]
			if ln.wi != wi || !ln.nicDown {
				continue
			}
			if err := w.rebuildLane(ep, li, uct.ErrLocalNICReinit); err != nil {
				retry = err
				continue
			}
			rebuilt = true
		}
		if rebuilt {
			w.tellLaneStatus(ep, wi, laneStatusUp)
		}
	}
	if retry != nil {
		w.postLinkLater(ev, retry)
	}
}

// remoteUp rebuilds ev.ep's lanes to the peer's iface ev.ridx, which its
// peer reported up again (lock held).
func (w *Worker) remoteUp(ev *linkEvent) {
	ep := ev.ep
	if ep.err != nil || ep.closed {
		return
	}
	var retry error
	for li := range ep.lanes {
		ln := &ep.lanes[li]
		// the lanes the peer's report failed, and any other lane to that
		// iface that failed meanwhile (the transport may have told first)
		if ln.ridx != ev.ridx || !ln.rnicDown && (ln.failed == nil || ln.ep != nil) {
			continue
		}
		if ln.nicDown {
			continue // our own side is down too: rebuilt when it comes back
		}
		if err := w.rebuildLane(ep, li, uct.ErrRemoteNICReinit); err != nil {
			retry = err
		}
	}
	if retry != nil {
		w.postLinkLater(ev, retry)
	}
}

// rebuildLane connects lane li of ep again on its iface to the peer's
// iface, binds it and reports it restored with cause st (lock held). The
// old uct endpoint is closed after the lock is released.
func (w *Worker) rebuildLane(ep *Endpoint, li int, st uct.Status) error {
	ln := &ep.lanes[li]
	if !w.canPost() {
		return uct.ErrBusy // another goroutine holds the transports: later
	}
	uep, err := w.laneConnect(ep, li)
	// a connection waiting for the peer is this rebuild's: the probes
	// leave it alone (reconnectProbe)
	ln.prb.rebuilding = err == uct.ErrInProgress
	if err != nil {
		return err // uct.ErrInProgress: asked again later (postLinkLater)
	}
	if ln.ep != nil {
		w.laneClose = append(w.laneClose, ln.ep)
	}
	ln.ep = uep
	ln.nicDown, ln.rnicDown, ln.bindSent = false, false, false
	if !ln.standby {
		ln.wi.use() // a lane standing by stays idle until chosen (lanesPicked)
	}
	// bind the new connection before anything else travels on it
	ep.sendBind(li)
	w.foEvent(failover.Event{Kind: failover.Restored, Endpoint: ep.name, From: ep.foLane(li), To: ep.foLane(li),
		Cause: uct.NewOpError(ln.attr.Transport, "link", ep.name, st, fmt.Errorf("lane %d rebuilt on %s", li, ln.attr.Device)),
		At:    time.Now()})
	w.laneUp(ep, li)
	if ln.failed != nil && ln.ep == uep && ep.err == nil {
		// nothing in laneUp took the lane back (no failover channel
		// yet): it is healthy, offer it to lane choice. One that laneUp
		// failed again (its fail-back's sync could not be posted) is
		// closed and stays failed.
		ln.failed = nil
		ep.pickLanes()
	}
	return nil
}

// tellLaneStatus tells ep's peer that our iface wi went down or came
// back, over a healthy lane on another iface (lock held); without one,
// the peer learns from its own lanes.
func (w *Worker) tellLaneStatus(ep *Endpoint, wi *wiface, status uint8) {
	if !ep.ridKnown || !w.canPost() {
		return
	}
	idx := w.ifaceIndex(wi)
	if idx < 0 {
		return
	}
	best := -1
	for i := range ep.lanes {
		ln := &ep.lanes[i]
		if ln.wi == wi || ln.ep == nil || ln.failed != nil || ln.nicDown || !ep.foLane(i).Health.Carries() {
			continue
		}
		if best < 0 || i == ep.amLane {
			best = i
		}
	}
	if best < 0 {
		return
	}
	m := laneStatus{dst: ep.rid, status: status, iface: uint8(idx)}
	ep.lanes[best].ep.AMBcopy(amLaneStatus, m.encode(ep.scratch[:0]), nil)
}

// onLaneStatus handles a peer's report about one of its ifaces (inside
// iface Progress; laneOK checked it arrived on a bound lane of ep).
func (w *Worker) onLaneStatus(_ any, data []byte, _ uct.AMFlags) {
	m, err := decodeLaneStatus(data)
	if err != nil {
		return
	}
	w.lockCB()
	defer w.unlockCB()
	ep := w.epByID(m.dst)
	if ep == nil || ep.err != nil || w.cfg.Failover.Mode == failover.Off {
		return
	}
	if m.status == laneStatusUp {
		w.postLink(&linkEvent{ep: ep, ridx: int(m.iface), at: time.Now()})
		return
	}
	for li := range ep.lanes {
		ln := &ep.lanes[li]
		if ln.ridx != int(m.iface) || ln.rnicDown {
			continue
		}
		// marked even when the lane failed already (the transport may
		// have told first): the peer's report that it is back rebuilds it
		ln.rnicDown = true
		if ln.ep == nil {
			continue
		}
		if ln.wi.deviceDown() {
			// our end of the link is down too (a direct cable: the peer
			// lost its carrier because we went down), which our own
			// watcher reports: the local device is the broken part
			if !ln.nicDown {
				ln.nicDown = true
				w.laneFault(ep, li, uct.NewOpError(ln.attr.Transport, "link", ep.name, uct.ErrLocalNICFailed,
					fmt.Errorf("%s device %s is down (the peer reports its iface %d down too)", ln.attr.Transport, ln.attr.Device, m.iface)))
			}
		} else {
			w.laneFault(ep, li, uct.NewOpError(ln.attr.Transport, "link", ep.name, uct.ErrRemoteNICFailed,
				fmt.Errorf("the peer reports its iface %d down", m.iface)))
		}
		if ep.err != nil {
			return
		}
	}
}

// nicCause names our device as the broken part of lane li's fault err
// (lock held, failover on): a post or completion that failed otherwise
// (the route lost, a timeout, operations flushed) while the lane's own
// device is not usable gets uct.ErrLocalNICFailed, as the device watcher
// would have given it had Progress handled the device's change first. A
// dead peer stays a dead peer.
func (ep *Endpoint) nicCause(li int, err error) error {
	switch uct.StatusOf(err) {
	case uct.ErrLocalNICFailed, uct.ErrPeerFailed:
		return err
	}
	ln := &ep.lanes[li]
	if !ln.wi.deviceDown() {
		return err
	}
	return uct.NewOpError(ln.attr.Transport, "link", ep.name, uct.ErrLocalNICFailed,
		fmt.Errorf("lane %d on %s, whose device is down: %w", li, ln.attr.Device, err))
}

// deviceDown reports whether wi's device is not usable: its last status
// handled said so, or (rc) the device's status says so now.
func (wi *wiface) deviceDown() bool {
	if wi.linkDown {
		return true
	}
	if m, ok := wi.md.md.(*rc.MD); ok {
		return !m.Device().Watchers.Status().Usable()
	}
	return false
}
