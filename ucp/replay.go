package ucp

import (
	"fmt"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/internal/tsc"
	"github.com/ucgo/ucgo/uct"
)

// Failover of a sequenced endpoint. When laneFault accepts a lane's
// fault, failOver marks the lane failed, closes its uct endpoint (its
// outstanding operations complete with errors), picks the AM and RMA
// lanes among the others and sends amSync over the new AM lane with what
// this side delivered. The peer acknowledges from its log what that
// covers, replays the rest over the lane the sync came on, moves its own
// AM lane there and answers with what it delivered; this side then
// replays its own rest and reports failover.FailedOver. Until the answer,
// new sequenced sends wait (back-pressure), so the replayed messages go
// first. Data moved by RMA on the failed lane (rendezvous chunks, Put,
// Get) is moved again from the request's own buffers on the new RMA lane
// once every chunk posted on the failed lane has reported (redoChunks,
// chunkRetry): writes and reads of the same bytes are idempotent. Syncs
// and the writes moved wait until both ends of the failed lane are
// closed (fence.go). Syncs are numbered, sent again while unanswered and
// acted on once (syncnum.go).

// foState is a failover of one endpoint in progress.
type foState struct {
	syncing  bool   // our sync is unanswered: sequenced sends wait
	syncDue  bool   // our sync could not be sent yet
	replyDue bool   // the answer to the peer's sync could not be sent yet
	resend   uint64 // next logged message to send again (0: none)
	kind     failover.Kind
	from, to int
	cause    error
	seen     time.Time // the fault seen
	sentAt   time.Time // our sync sent: the first message on the new lane
	detect   tsc.Ticks
	replayed int
	// num is our sync's number (syncNums); txAt and txLane are when and
	// on which lane it last went (resync), txPeer the number of the
	// peer's last sync acted on then
	num    uint32
	txAt   time.Time
	txLane int
	txPeer uint32
	// backDue: a fail-back answered while the peer's traffic (and so
	// ours) was still on the lane it left; reported once ours follows
	// the peer's to the lane it went back to
	backDue bool
}

// failOver moves ep's traffic off the failed lane li (lock held). It
// reports false when it cannot: the endpoint has no sequenced channel or
// its peer's id is not known yet, or the policy allows no other lane up;
// the caller then fails the endpoint.
func (w *Worker) failOver(ep *Endpoint, li int, err error) bool {
	f := ep.fo
	if f == nil || !ep.ridKnown {
		return false
	}
	now := time.Now()
	ln := &ep.lanes[li]
	if _, ok := w.cfg.Failover.Select(ep.foLanes(), li); !ok {
		return false
	}
	if ln.health != nil {
		ln.health.Fault(err, now)
	}
	ln.failed = err
	if ln.wi.deviceDown() {
		ln.nicDown = true // rebuilt when the device comes back (linkwatch.go)
	}
	if ln.ep != nil {
		w.laneClose = append(w.laneClose, ln.ep)
		ln.ep = nil
	}
	if !ep.pickLanes() {
		return false
	}
	fv := &f.fov
	// syncing first: the writes redoChunks moves wait for the answer. A
	// failover while our last sync is unanswered supersedes it: its new
	// number makes the answer to the old one stale (onSync).
	*fv = foState{kind: failover.FailedOver, from: li, to: ep.amLane, cause: err, seen: now,
		detect: w.foDetect(ep, li), syncing: true, num: f.syncs.next()}
	w.redoChunks(ep, li)
	f.asked = false
	w.sendSync(ep, false)
	return true
}

// failBack moves ep's traffic back to lane li, rebuilt and answering
// again, when the policy fails back and li is the lane it prefers (lock
// held).
func (w *Worker) failBack(ep *Endpoint, li int) {
	f := ep.fo
	ln := &ep.lanes[li]
	if f == nil || ln.ep == nil || ln.failed == nil {
		return
	}
	now := time.Now()
	ln.failed = nil
	if ln.health != nil {
		ln.health.Probe(now)
		for ln.health.State() != failover.Up {
			ln.health.Heard(now)
		}
	}
	from := ep.amLane
	ep.pickLanes()
	if !w.cfg.Failover.FailBack || ep.amLane != li || from == li {
		return
	}
	f.fov = foState{kind: failover.FailedBack, from: from, to: li, seen: now, syncing: true, num: f.syncs.next()}
	f.asked = false
	w.sendSync(ep, false)
}

// redoChunks makes every transfer of ep whose chunks move on lane li
// start again on the RMA lane once its posted chunks have reported (lock
// held): a stalled one posts no more chunks on li.
func (w *Worker) redoChunks(ep *Endpoint, li int) {
	var rs []*Request
	for _, l := range []*reqList{&ep.stalled, &ep.inflight} {
		for r := l.head; r != nil; r = r.next {
			if r.xall != nil && r.usesLane(li) {
				rs = append(rs, r)
			}
		}
	}
	for _, r := range rs {
		r.xredo = true
		if r.list != &ep.stalled {
			continue // onComp finishes it, then chunkRetry moves it
		}
		ep.stalled.remove(r)
		ep.inflight.push(r)
		r.xoff = len(r.xbuf)
		r.xbuf, r.xkey, r.iov[0] = nil, nil, nil
		if r.stripe != nil {
			w.postStripe(r) // drops the counts it holds, then finishes
			continue
		}
		if r.xc.Count--; r.xc.Count == 0 { // the count postChunks held
			err := r.xc.Status
			r.xc.Status = nil
			w.finishChunks(r, err)
		}
	}
}

// chunkRetry is finishChunks of a transfer of a sequenced endpoint that
// must move (redoChunks) or failed with err (lock held). A fault of its
// lane goes to laneFault first; if the endpoint survives, the transfer
// starts again on the RMA lane. It reports whether it did.
func (w *Worker) chunkRetry(r *Request, err error) bool {
	ep := r.ep
	if r.xlane < 0 || r.xlane >= len(ep.lanes) {
		return false
	}
	if !r.xredo && ep.lanes[r.xlane].failed == nil { // the first news of the lane's fault
		if !uct.StatusOf(err).IsEndpointFatal() {
			return false
		}
		if ep.lanes[r.xlane].failed == nil {
			w.laneFault(ep, r.xlane, err)
		}
		if ep.err != nil || ep.closed || ep.lanes[r.xlane].failed == nil {
			return false
		}
	}
	r.xredo = false
	if ep.err != nil || ep.closed || ep.rmaLane < 0 {
		return false
	}
	if w.parkRetry(r, err) {
		return true // moves once the peer closed its end (fence.go)
	}
	li := ep.rmaLane
	var k uct.RKey
	switch {
	case r.ukey != nil: // rendezvous: the peer's bundle, unpacked for li
		ke, kerr := ep.laneKeyRef([]byte(r.ukey.bundle), li)
		if kerr != nil {
			return false
		}
		r.ukey.c.put(r.ukey)
		r.ukey, k = ke, ke.key
	case r.rkey != nil && li < len(r.rkey.keys) && r.rkey.keys[li] != nil:
		k = r.rkey.keys[li]
	default:
		return false
	}
	// A new completion for the new attempt: reports of the failed lane's
	// operations that come late (its close cancels what it still holds)
	// find the old one and are ignored (onComp), and the request never
	// returns to the pool, where a late report could reach its next use.
	c := &uct.Completion{}
	c.Func = r.onComp
	r.xc, r.zombie = c, true
	ep.fo.fov.replayed++
	w.stats.Replayed++
	w.startChunks(r, li, r.xput, r.xall, r.xraddr, k)
	return true
}

// sendSync sends our sync (reply false) or the answer to the peer's last
// one on ep's AM lane, carrying what we delivered and the sync's number
// (lock held).
func (w *Worker) sendSync(ep *Endpoint, reply bool) {
	f := ep.fo
	if ep.err != nil || ep.closed {
		return
	}
	if ep.amLane < 0 || w.syncFenced() || !w.canPost() {
		f.fov.syncDue, f.fov.replyDue = f.fov.syncDue || !reply, f.fov.replyDue || reply
		w.toBacklog(ep)
		return
	}
	fv := &f.fov
	m := syncMsg{dst: ep.rid, delivered: f.win.Delivered(), num: fv.num}
	if reply {
		m.flags, m.num = syncReply, f.syncs.peer
	} else if fv.kind == failover.FailedOver && fv.from >= 0 && fv.from < len(ep.lanes) {
		ln := &ep.lanes[fv.from]
		m.flags = syncLane
		m.status = uint8(uct.StatusOf(fv.cause))
		m.local = mdPartName(ln.wi.md.comp.Name(), ln.wi.ord)
		m.remote = mdPartName(ln.wi.md.comp.Name(), ln.rord)
	}
	var err error
	if !f.syncs.lose(reply) {
		_, err = ep.lanes[ep.amLane].ep.AMBcopy(amSync, m.encode(f.scratch[:0]), nil)
	}
	switch {
	case err == nil:
		f.win.TakeAck()
		if reply {
			fv.replyDue = false
			break
		}
		now := time.Now()
		fv.syncDue = false
		fv.txAt, fv.txLane, fv.txPeer = now, ep.amLane, f.syncs.peer
		if fv.sentAt.IsZero() {
			fv.sentAt = now // the first message on the new lane
		}
	case retryLater(err):
		fv.syncDue, fv.replyDue = fv.syncDue || !reply, fv.replyDue || reply
		w.toBacklog(ep)
	default:
		w.laneFault(ep, ep.amLane, err)
	}
}

// onSync receives the peer's sync or its answer to ours.
func (w *Worker) onSync(arg any, data []byte, _ uct.AMFlags) {
	m, err := decodeSync(data)
	if err != nil {
		return
	}
	w.lockCB()
	defer w.unlockCB()
	ep := w.epByID(m.dst)
	if ep == nil || ep.err != nil || ep.closed {
		return
	}
	ep.seqStart()
	f := ep.fo
	delivered := m.delivered
	if delivered >= f.log.Next() {
		return // names messages we never sent
	}
	w.seqAckIn(ep)
	ep.heardOn(arg)
	reply := m.flags&syncReply != 0
	if reply && (m.num != f.fov.num || !f.fov.syncing) || !reply && !f.syncs.fromPeer(m.num) {
		// A sync of the peer's acted on already, sent again because our
		// answer did not reach it: answered again, acted on once (it
		// may name a lane the peer left that has come back since). Or
		// an answer to a sync of ours that a newer one superseded, or a
		// second answer to ours: the newer sync waits for its own. What
		// either says the peer delivered holds all the same.
		f.log.Ack(delivered)
		if !reply {
			w.sendSync(ep, true)
		}
		return
	}
	// The peer's traffic moved to the lane its sync or answer came on:
	// ours follows. Not after an answer, though, when a sync of the
	// peer's came since ours went: the answer may have left before that
	// sync, which moved ours to where the peer's traffic went next.
	if li := ep.laneOn(arg); li >= 0 && ep.lanes[li].failed == nil && ep.lanes[li].ep != nil &&
		(!reply || f.syncs.peer == f.fov.txPeer) {
		ep.amLane = li
		if f.fov.backDue && li == f.fov.to {
			f.fov.backDue = false
			f.fov.sentAt = time.Now() // our traffic lands on the lane now
			w.reportSwitch(ep)
		}
	}
	f.log.Ack(delivered)
	f.asked = false
	f.fov.resend = delivered + 1
	if m.flags&syncLane != 0 {
		w.peerLeftLane(ep, &m, ep.laneOn(arg))
	}
	if !reply {
		w.sendSync(ep, true)
		w.resend(ep)
		w.resync(ep) // ours, if our AM lane moved from the lane it went on
		return
	}
	f.fov.syncing = false
	w.resend(ep)
	fv := &f.fov
	if fv.kind == failover.FailedBack && ep.amLane == fv.from {
		// the peer's traffic is still on the lane we left (its own
		// probes have not brought ours back yet) and ours followed it
		// there (onSync): the fail-back is reported when ours follows
		// the peer's back
		fv.backDue = true
	} else {
		w.reportSwitch(ep)
	}
	w.unfenceAfterSync(ep)
}

// reportSwitch counts ep's lane switch and reports its event (lock held).
func (w *Worker) reportSwitch(ep *Endpoint) {
	fv := &ep.fo.fov
	if fv.kind == failover.FailedBack {
		w.stats.FailedBack++
	} else {
		w.stats.FailedOver++
	}
	w.foEventT(failover.Event{Kind: fv.kind, Endpoint: ep.name, From: ep.foLane(fv.from), To: ep.foLane(ep.amLane),
		Cause: fv.cause, Switch: fv.sentAt.Sub(fv.seen), Replayed: fv.replayed, At: time.Now()}, fv.detect)
}

// unfenceAfterSync lets ep's traffic go on once its sync was answered
// (lock held).
func (w *Worker) unfenceAfterSync(ep *Endpoint) {
	if !ep.queue.empty() || !ep.stalled.empty() {
		w.toBacklog(ep)
	}
	w.unfence(ep)
}

// laneOn returns the lane of ep whose iface is arg (-1: none).
func (ep *Endpoint) laneOn(arg any) int {
	wi, _ := arg.(*wiface)
	for i := range ep.lanes {
		if ep.lanes[i].wi == wi {
			return i
		}
	}
	return -1
}

// resend sends again, in order, the logged messages from f.fov.resend on
// (lock held); back-pressure leaves the rest for the backlog.
func (w *Worker) resend(ep *Endpoint) {
	f := ep.fo
	for f.fov.resend != 0 && f.fov.resend < f.log.Next() {
		if ep.err != nil || ep.closed {
			return
		}
		if !w.canPost() {
			w.toBacklog(ep)
			return
		}
		if f.fov.resend <= f.log.Acked() {
			f.fov.resend = f.log.Acked() + 1 // acknowledged meanwhile
			continue
		}
		b, _ := f.log.Get(f.fov.resend)
		le.PutUint32(b[8:], uint32(f.win.Delivered()))
		_, err := ep.lanes[ep.amLane].ep.AMBcopy(amSeq, b, nil)
		if retryLater(err) {
			w.toBacklog(ep)
			w.routeLost(ep, ep.amLane, err)
			return
		}
		if err != nil {
			w.laneFault(ep, ep.amLane, err)
			return
		}
		f.fov.resend++
		f.fov.replayed++
		w.stats.Replayed++
	}
	f.fov.resend = 0
}

// seqBundle returns the key bundle a rendezvous announces for buf (RTS,
// RTR), registered as e on the RMA lane's memory domain: on a sequenced
// endpoint with several lanes, buf is registered on every other lane's
// memory domain too (r.xregs keeps those registrations until r
// completes), so the peer can move the data on whichever lane is left
// after a failover (lock held).
func (ep *Endpoint) seqBundle(r *Request, e *regEntry, buf []byte, acc uct.Access) ([]byte, error) {
	if ep.fo == nil || len(ep.lanes) < 2 {
		return e.bundle, nil
	}
	ps, err := decodeBundle(e.bundle)
	if err != nil {
		return nil, err
	}
	for _, x := range r.xregs {
		ep.w.regs.put(x)
	}
	r.xregs = r.xregs[:0]
lanes:
	for i := range ep.lanes {
		wi := ep.lanes[i].wi
		if !isRMALane(&ep.lanes[i]) || !wi.md.attr.CanRegister {
			continue
		}
		// e may have been registered for an earlier RMA lane (a send
		// retried after a failover): skip the domains the bundle has
		name := mdPartName(wi.md.comp.Name(), wi.ord)
		for _, p := range ps {
			if p.name == name {
				continue lanes
			}
		}
		x, err := ep.w.regs.get(ep, wi, buf, acc)
		if err != nil {
			return nil, err
		}
		r.xregs = append(r.xregs, x)
		more, err := decodeBundle(x.bundle)
		if err != nil {
			return nil, err
		}
		ps = append(ps, more...)
	}
	return packBundle(ps), nil
}

// peerLeftLane is told by the peer's sync that it failed over from the
// lane m names (lock held). That lane is dead at the peer's end, so ours
// fails too: it is closed and our transfers on it move, as for a fault
// of our own, but without a sync of ours (this one is being answered);
// the event names the status the peer's lane failed with (the peer's
// local NIC being our remote one). Closing it before
// anything the peer sends after its sync is handled also keeps late
// packets of the peer's first attempts on that lane from landing in
// buffers that its replayed attempts have since completed.
func (w *Worker) peerLeftLane(ep *Endpoint, m *syncMsg, arrival int) {
	for j := range ep.lanes {
		ln := &ep.lanes[j]
		name := ln.wi.md.comp.Name()
		if j == arrival || ln.failed != nil || mdPartName(name, ln.wi.ord) != m.remote || mdPartName(name, ln.rord) != m.local {
			continue
		}
		// the peer's local NIC is our remote one
		st := uct.Status(m.status)
		switch st {
		case uct.ErrLocalNICFailed:
			st = uct.ErrRemoteNICFailed
		case uct.ErrLocalNICReinit:
			st = uct.ErrRemoteNICReinit
		case uct.OK:
			st = uct.ErrConnectionReset
		}
		if ln.wi.deviceDown() {
			// our own device is down (which the peer saw as its route
			// lost): ours is the broken part, and the link watch
			// rebuilds the lane when it comes back (linkwatch.go)
			st = uct.ErrLocalNICFailed
			ln.nicDown = true
		}
		err := uct.NewOpError(ln.attr.Transport, "lane", ep.name, st, fmt.Errorf("lane %d: the peer failed over from it", j))
		now := time.Now()
		if ln.health != nil {
			ln.health.Fault(err, now)
		}
		ln.failed = err
		if st == uct.ErrRemoteNICFailed {
			// as if its lane status had come first: the lane is rebuilt
			// when the peer reports its NIC up again (linkwatch.go)
			ln.rnicDown = true
		}
		if ln.ep != nil {
			w.laneClose = append(w.laneClose, ln.ep)
			ln.ep = nil
		}
		if !ep.pickLanes() {
			// no lane our policy lets us use is left (under
			// SameTransport the peer may have moved to another
			// transport): the endpoint fails, as after our own fault
			w.foEventT(failover.Event{Kind: failover.Exhausted, Endpoint: ep.name, From: ep.foLane(j), Cause: err,
				At: now}, w.foDetect(ep, j))
			w.failEP(ep, err)
			return
		}
		if arrival >= 0 && ep.lanes[arrival].failed == nil && ep.lanes[arrival].ep != nil && ep.policyAllows(arrival) {
			ep.amLane = arrival
		}
		w.stats.FailedOver++
		w.foEventT(failover.Event{Kind: failover.FailedOver, Endpoint: ep.name, From: ep.foLane(j), To: ep.foLane(ep.amLane),
			Cause: err, At: now}, w.foDetect(ep, j))
		w.redoChunks(ep, j)
		return
	}
}
