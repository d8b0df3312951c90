package ucp

import (
	"fmt"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/ucp/internal/match"
	"github.com/ucgo/ucgo/uct"
)

// The lifecycle of an endpoint: created by Connect (or by a peer's wireup,
// onWireup), failed by a transport error or keepalive (failEP), closed by
// the user, the peer or the worker (Close, onClose, closeEP), and purged
// after a failure (Purge).

// Connect creates an endpoint to the worker at the packed address addr
// (from Worker.Address). If an endpoint to that worker exists (created by
// an earlier Connect or by the peer connecting to us) it is returned with
// p applied. Lanes are chosen by capability (see connectLanes): shm
// between workers on the same host, rc otherwise.
func (w *Worker) Connect(addr []byte, p EPParams) (*Endpoint, error) {
	a, err := UnpackAddress(addr)
	if err != nil {
		return nil, opErr("connect", "", err)
	}
	w.lock()
	if w.safe && w.byUUID[a.UUID] == nil && !w.canPost() {
		// connecting calls into the transports: wait for them
		w.unlock()
		w.lockT()
	}
	defer w.unlock()
	if w.closed {
		return nil, opErr("connect", "", uct.ErrClosed)
	}
	if ep := w.byUUID[a.UUID]; ep != nil {
		ep.params = p
		w.setSourceTag(ep, p.SourceTag)
		return ep, nil
	}
	return w.newEP(a, p, true)
}

// newEP connects lanes to a and, for Connect, sends the wireup request
// (lock held).
// named says p comes from the user (Connect), so p.SourceTag is the
// peer's rank; an endpoint created for a peer that connected to us has no
// known source tag until Connect names it.
func (w *Worker) newEP(a Address, p EPParams, named bool) (*Endpoint, error) {
	name := fmt.Sprintf("worker %016x", a.UUID)
	ep := &Endpoint{w: w, uuid: a.UUID, name: name, params: p, id: uint32(len(w.eps))}
	if errs := w.connectLanes(ep, a, p); len(ep.lanes) == 0 {
		return nil, opErr("connect", name, errNoLane(errs))
	}
	if w.cfg.Failover.Mode != failover.Off {
		ep.seqStart()
		for i := range ep.lanes {
			// a rail still connecting (connectRails) starts failed
			if ln := &ep.lanes[i]; ln.failed != nil && ln.health != nil {
				ln.health.Fault(ln.failed, time.Now())
			}
		}
	}
	for i := range ep.lanes {
		i := i
		ep.lanes[i].kaComp.Func = func(c *uct.Completion) {
			w.lockCB()
			defer w.unlockCB()
			ep.lanes[i].kaBusy = false
			err := c.Status
			c.Status = nil
			if err != nil && uct.StatusOf(err).IsEndpointFatal() {
				w.laneFault(ep, i, err)
			}
		}
	}
	ep.pickLanes()
	w.eps = append(w.eps, ep)
	w.live = append(w.live, ep)
	w.byUUID[a.UUID] = ep
	if named && w.cfg.SourceTagMask != 0 {
		w.setSourceTag(ep, p.SourceTag)
	}
	if named {
		// An endpoint created for a wireup request answers once the
		// request has been checked (onWireup).
		ep.wireupDue = true
		ep.sendWireup()
	}
	return ep, nil
}

// setSourceTag gives ep's peer its rank in the matcher (lock held); a
// purged endpoint of that rank is forgotten (match.Matcher.SetSourceTag)
// and so is its status.
func (w *Worker) setSourceTag(ep *Endpoint, tag uint64) {
	w.m.SetSourceTag(match.Src(ep.id), tag)
	w.forgetGoneErr()
}

// fail names the endpoint's failure for requests of op.
func (ep *Endpoint) fail(op string) error { return opErr(op, ep.name, ep.err) }

// failEP puts ep in error state with the transport error err (lock
// held): queued requests complete canceled, in-flight ones with err, the
// lanes are closed; in Peer mode tag matching reacts and the error
// callback is queued.
func (w *Worker) failEP(ep *Endpoint, err error) {
	if ep.err != nil || ep.closed {
		return
	}
	ep.err = err
	w.atomicsLost(ep, err)
	w.completeEP(ep, uct.ErrCanceled, err)
	w.closeLanes(ep)
	if w.cfg.ErrorMode != ErrorModePeer {
		return
	}
	if !ep.remoteClosed {
		rs := w.m.Fail(match.Src(ep.id))
		for _, mr := range rs {
			r := mr.Data.(*Request)
			if w.cfg.MatchingMode == MatchingNeverSuspend {
				w.complete(r, opErr("tag_recv", ep.name, err))
			} else {
				r.notice = ErrProcFailedPending
			}
		}
	}
	if !ep.errReported {
		ep.errReported = true
		w.errq = append(w.errq, ep)
	}
}

// closeEP removes ep from the worker; outstanding requests complete with
// status (lock held).
func (w *Worker) closeEP(ep *Endpoint, force bool, status uct.Status) {
	if ep.closed {
		return
	}
	if s := match.Src(ep.id); ep.err != nil && w.cfg.SourceTagMask != 0 && w.m.Failed(s) {
		// for receives that only this endpoint's peer could match
		w.goneErr[s] = ep.fail("tag_recv")
	}
	if !force && ep.err == nil && ep.ridKnown && w.canPost() {
		// best effort: tell the peer we are gone
		le.PutUint32(ep.scratch[:], ep.rid)
		ep.amSend(amClose, ep.scratch[:4], nil)
	}
	ep.closed = true
	w.completeEP(ep, status, status)
	for _, r := range w.flushers {
		if r.ep == ep {
			r.zombie = true
			w.complete(r, opErr(kindOp[r.kind], ep.name, status))
		}
	}
	w.closeLanes(ep)
	w.regs.releaseEP(ep)
	w.eps[ep.id] = nil
	if w.byUUID[ep.uuid] == ep {
		delete(w.byUUID, ep.uuid)
	}
	for i, e := range w.live {
		if e == ep {
			w.live = append(w.live[:i], w.live[i+1:]...)
			break
		}
	}
}

// closeLanes detaches ep's lanes (lock held); unlock closes their uct
// endpoints.
func (w *Worker) closeLanes(ep *Endpoint) {
	w.dropAMFrags(ep) // no more fragments can arrive
	for i := range ep.lanes {
		w.cancelDial(&ep.lanes[i])
		if ep.lanes[i].ep != nil {
			w.laneClose = append(w.laneClose, ep.lanes[i].ep)
			ep.lanes[i].ep = nil
		}
		if k := ep.lanes[i].keys; k != nil {
			k.close()
		}
	}
}

// Close closes the endpoint. CloseFlush: the returned request completes
// when outstanding operations have completed and the peer has been told.
// CloseForce: outstanding requests complete with uct.ErrCanceled and the
// request completes at once. Safe inside the endpoint's error handler.
func (ep *Endpoint) Close(mode CloseMode) *Request {
	w := ep.w
	w.lock()
	defer w.unlock()
	r := w.getReq(kClose, ep, nil)
	if ep.closed {
		w.complete(r, nil)
		return r
	}
	if mode == CloseForce || ep.err != nil {
		w.closeEP(ep, mode == CloseForce, uct.ErrCanceled)
		w.complete(r, nil)
		return r
	}
	r.closing = true
	r.value = ep.seqMark()
	w.flushers = append(w.flushers, r)
	return r
}

// onClose: the peer closed its endpoint to us.
func (w *Worker) onClose(_ any, data []byte, _ uct.AMFlags) {
	dst, err := decodeDst(data)
	if err != nil {
		return
	}
	w.lockCB()
	defer w.unlockCB()
	if ep := w.epByID(dst); ep != nil {
		ep.remoteClosed = true
		w.failEP(ep, uct.NewOpError("", "close", ep.name, uct.ErrConnectionReset, fmt.Errorf("peer closed the endpoint")))
	}
}

// Purge shuts ep down after a failure (or at any time) and removes its
// traces: queued sends complete canceled, receives that can only match it
// complete with its error (peer failed; uct.ErrCanceled if it had not
// failed), its unexpected messages and partial rendezvous transfers are
// dropped; then tag matching restarts if no other failure is pending.
// Receives posted later that can only match ep's peer (Config.SourceTagMask,
// EPParams.SourceTag) complete at once with the same status (that of the
// last endpoint purged at that rank), until an endpoint is connected with
// the same SourceTag (a restarted peer at the same rank): receives for
// that rank then wait for it. Wildcard receives posted later stay posted.
// The worker keeps one such status per rank, none without a source-tag
// mask.
func (w *Worker) Purge(ep *Endpoint) {
	w.lock()
	defer w.unlock()
	status := ep.err
	if status == nil {
		status = uct.ErrCanceled
	}
	w.closeEP(ep, true, uct.ErrCanceled)
	s := match.Src(ep.id)
	onlyS, msgs, pairs := w.m.Purge(s)
	if w.m.Gone(s) {
		// the matcher keeps s for its rank, replacing older ones
		w.goneErr[s] = opErr("tag_recv", ep.name, status)
	}
	w.forgetGoneErr()
	for _, mr := range onlyS {
		w.complete(mr.Data.(*Request), opErr("tag_recv", ep.name, status))
	}
	for _, m := range msgs {
		w.freeUnexp(m.Data.(*unexp))
	}
	for _, p := range pairs {
		w.deliver(p.Recv.Data.(*Request), p.Msg.Data.(*unexp))
	}
}

// forgetGoneErr drops the statuses of the sources the matcher has
// forgotten (lock held). The matcher keeps no purged source without a
// rank and at most one per rank, so goneErr holds at most one entry per
// rank besides the failed endpoints that were closed and not purged.
func (w *Worker) forgetGoneErr() {
	for s := range w.goneErr {
		if !w.m.Gone(s) && !w.m.Failed(s) {
			delete(w.goneErr, s)
		}
	}
}
