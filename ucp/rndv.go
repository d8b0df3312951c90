package ucp

import (
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

// The rendezvous protocol, shared by tag messages (tag.go) and active
// messages (am.go); the two differ only in their announcement (RTS with a
// tag, matched; user RTS with a header, given to a handler).
//
//   - The sender registers its buffer through the registration cache
//     (rndvSender), takes a slot that names its request on the wire and
//     sends the announcement on the AM lane (rndvAnnounce); the request
//     waits in flight for the receiver's ATS.
//   - With RndvGet the receiver unpacks the sender's key through the key
//     cache and GETs the data (rndvMove), then answers ATS. With RndvPut
//     (tag messages only) it answers RTR with its own registered buffer,
//     the sender PUTs (rndvMove) and answers ATP.
//   - Data moves in chunks of the RMA lane's zcopy limit (postChunks).
//   - A transfer that fails answers the peer with the failure's status
//     (nackRndv), so both requests complete with it; an endpoint-fatal
//     status fails the endpoint.

// rndvSender prepares the sender's side of a rendezvous (lock held): with
// get, r.buf is registered for the peer's reads; r gets a slot. It
// returns the buffer's remote address and packed key (none without get or
// data) and the slot.
func (ep *Endpoint) rndvSender(r *Request, get bool) (raddr uint64, rkey []byte, sreq uint64, err error) {
	w := ep.w
	if get {
		if r.reg == nil && len(r.buf) > 0 {
			e, err := w.regs.get(ep, ep.lanes[ep.rmaLane].wi, r.buf, uct.AccessRemoteRead)
			if err != nil {
				return 0, nil, 0, err
			}
			r.reg = e
		}
		if r.reg != nil {
			raddr = r.reg.mem.Address()
			if rkey, err = ep.seqBundle(r, r.reg, r.buf, uct.AccessRemoteRead); err != nil {
				return 0, nil, 0, err
			}
		}
	}
	if r.slot == 0 {
		r.slot = w.slotAlloc(r)
	}
	return raddr, rkey, r.slot, nil
}

// rndvAnnounce sends the announcement r.hdr with AM id on the AM lane
// (lock held); r then waits in flight for the receiver's answer.
func (ep *Endpoint) rndvAnnounce(r *Request, id uint8) error {
	if err := ep.amSend(id, r.hdr, nil); err != nil {
		return err
	}
	ep.inflight.push(r)
	return nil
}

// rndvMove moves the data of rendezvous request r over ep's RMA lane
// (lock held): a receiver GETs the peer's buffer at raddr (packed key
// rkey) into buf, a sender answering an RTR PUTs buf there. r.peerReq
// names the peer's request. The request finishes as stepDone says (ATS or
// ATP, then completion) once the data has moved, or fails (nackRndv).
func (w *Worker) rndvMove(r *Request, ep *Endpoint, put bool, buf []byte, raddr uint64, rkey []byte) {
	if len(buf) == 0 {
		w.stepDone(r)
		return
	}
	if ep.rmaLane < 0 {
		w.failRndv(r, fmt.Errorf("no lane for get: %w", uct.ErrUnsupported))
		return
	}
	if len(ep.rails) > 1 && w.stripeRndv(r, ep, put, buf, raddr, rkey) {
		return
	}
	k, err := ep.laneKeyRef(rkey, ep.rmaLane)
	if err != nil {
		w.failRndv(r, err)
		return
	}
	r.ukey = k
	w.startChunks(r, ep.rmaLane, put, buf, raddr, k.key)
}

// startChunks moves buf to or from the peer's memory at raddr under key
// k on lane i of r.ep (PUT or GET zcopy), in chunks of the lane's zcopy
// limit (lock held). r finishes through finishChunks: stepDone once every
// chunk has completed, or failRndv with the first failure, after every
// posted chunk has reported, so that no completion touches r after it
// completed (and was perhaps reused).
//
// A chunk refused for lack of resources (uct.ErrNoResource, ErrBusy) does
// not fail r: r waits on its endpoint's stalled list, as a request in UCX's
// pending queue, and drainBacklog posts the rest, in order and before any
// operation started on the endpoint later, when the lane has room again.
// r.xc (r.comp unless the transfer moved lanes) holds one count of its own until the last chunk is posted, so
// chunks that complete meanwhile do not finish r early.
func (w *Worker) startChunks(r *Request, i int, put bool, buf []byte, raddr uint64, k uct.RKey) {
	if r.stripe != nil {
		w.unstripe(r) // started again on one lane (chunkRetry)
	}
	r.xbuf, r.xoff, r.xraddr, r.xkey, r.xlane, r.xput = buf, 0, raddr, k, i, put
	r.xall = buf
	if r.xc == nil {
		r.xc = &r.comp
	}
	r.xc.Count = 1
	r.xc.Status = nil
	w.postChunks(r)
}

// chunkMax is the largest chunk of a transfer on ln.
func (w *Worker) chunkMax(ln *lane, put bool) int {
	max := ln.attr.GetMaxZcopy
	if put {
		max = ln.attr.PutMaxZcopy
	}
	if max <= 0 {
		max = 1 << 20
	}
	if c := w.cfg.chunkMax; c > 0 && c < max {
		max = c
	}
	return max
}

// postChunks posts the chunks of r's transfer from r.xoff on (lock held);
// see startChunks.
func (w *Worker) postChunks(r *Request) {
	if r.gateHold && w.gateHeld(r) {
		w.holdChunks(r)
		return
	}
	if r.stripe != nil {
		w.postStripe(r)
		return
	}
	ep := r.ep
	if r.xoff < len(r.xbuf) && r.xc.Status == nil && !w.canPost() {
		// another goroutine holds the transport lock: it resumes r
		// (drainBacklog) before releasing it
		if r.list != &ep.stalled {
			if r.list != nil {
				r.list.remove(r)
			}
			ep.stalled.push(r)
		}
		w.toBacklog(ep)
		return
	}
	ln := &ep.lanes[r.xlane]
	max := w.chunkMax(ln, r.xput)
	for r.xoff < len(r.xbuf) && r.xc.Status == nil {
		end := min(r.xoff+max, len(r.xbuf))
		r.iov[0] = r.xbuf[r.xoff:end]
		r.xc.Count++
		var err error
		if r.xput {
			err = ln.ep.PutZcopy(r.iov[:], r.xraddr+uint64(r.xoff), r.xkey, r.xc)
		} else {
			err = ln.ep.GetZcopy(r.iov[:], r.xraddr+uint64(r.xoff), r.xkey, r.xc)
		}
		if err == uct.ErrInProgress {
			r.xoff = end
			continue
		}
		r.xc.Count--
		if retryLater(err) || err == uct.ErrBusy {
			if r.list != &ep.stalled {
				if r.list != nil {
					r.list.remove(r)
				}
				ep.stalled.push(r)
				w.chunkStalls++
			}
			w.toBacklog(ep)
			if ep.fo != nil {
				w.routeLost(ep, r.xlane, err)
			}
			return
		}
		if err != nil {
			r.xc.Status = err
			break
		}
		r.xoff = end
	}
	r.xbuf, r.xkey, r.iov[0] = nil, nil, nil
	if r.list != &ep.inflight {
		if r.list != nil {
			r.list.remove(r)
		}
		ep.inflight.push(r)
	}
	if r.xc.Count--; r.xc.Count > 0 {
		return // onComp finishes r
	}
	err := r.xc.Status
	r.xc.Status = nil
	w.finishChunks(r, err)
}

// resumeStalled posts the chunks left of ep's stalled transfers, oldest
// first (lock held). It reports whether none is left.
func (w *Worker) resumeStalled(ep *Endpoint) (int, bool) {
	n := 0
	for r := ep.stalled.head; r != nil; r = ep.stalled.head {
		w.postChunks(r)
		if r.list == &ep.stalled {
			return n, false
		}
		n++
		if ep.err != nil || ep.closed {
			return n, false
		}
	}
	return n, true
}

// finishChunks finishes r after its chunks completed with err (lock
// held).
func (w *Worker) finishChunks(r *Request, err error) {
	if r.gateEra != 0 {
		w.gateDone(r)
	}
	if ep := r.ep; ep != nil && ep.fo != nil && r.xall != nil {
		if (r.xredo || err != nil) && w.chunkRetry(r, err) {
			return // moving again on another lane
		}
		if r.xlane < len(ep.lanes) && ep.lanes[r.xlane].failed != nil {
			r.zombie = true // the failed lane's close may still report into r
		}
	}
	r.xall = nil
	if err != nil && r.kind == kFlush && r.ep != nil && r.ep.fo != nil && r.ep.err == nil && w.cfg.Failover.ShouldFailOver(err) {
		// a lane failed under the flush: its messages are replayed on
		// another lane, so the flush waits for their acks again and
		// flushes the lanes that carry then
		r.flushN = 0
		w.flushers = append(w.flushers, r)
		return
	}
	if err != nil {
		w.failRndv(r, err)
		return
	}
	w.stepDone(r)
}

// stepDone finishes r after its posted uct operations completed (lock
// held): a rendezvous sender that PUT answers ATP, a receiver ATS.
func (w *Worker) stepDone(r *Request) {
	switch r.kind {
	case kTagSend:
		if r.peerReq != 0 {
			ep := r.ep
			ep.ctl(amATP, (&ack{dst: ep.rid, req: r.peerReq}).encode)
		}
		w.complete(r, nil)
	case kTagRecv, kAMRecv:
		w.finishRndvRecv(r)
	case kFlush, kClose:
		w.finishFlush(r)
	default:
		w.complete(r, nil)
	}
}

// finishRndvRecv acknowledges a fetched rendezvous message (lock held).
func (w *Worker) finishRndvRecv(r *Request) {
	ep := r.rndvSrc
	ep.ctl(amATS, (&ack{dst: ep.rid, req: r.peerReq}).encode)
	w.completeRecvLen(r)
}

func (w *Worker) completeRecvLen(r *Request) {
	if r.rndvLen > len(r.buf) {
		w.complete(r, opErr(kindOp[r.kind], r.rndvSrc.name, &TruncatedError{Length: r.rndvLen, Buffer: len(r.buf)}))
		return
	}
	w.complete(r, nil)
}

// failRndv completes rendezvous request r with err, tells the peer and
// fails the endpoint if err is fatal to it (lock held).
func (w *Worker) failRndv(r *Request, err error) {
	w.nackRndv(r, err)
	w.complete(r, opErr(kindOp[r.kind], r.peerName(), atomicOutcome(r, err)))
	if r.ep != nil && uct.StatusOf(err).IsEndpointFatal() {
		w.laneFault(r.ep, r.xlane, err)
	}
}

// nackRndv tells the peer that the data transfer of rendezvous request r
// failed with err (lock held): a receiver answers ATS, a sender that PUTs
// answers ATP.
func (w *Worker) nackRndv(r *Request, err error) {
	if r.peerReq == 0 {
		return
	}
	ep, id := r.ep, uint8(amATP)
	if r.kind == kTagRecv || r.kind == kAMRecv {
		ep, id = r.rndvSrc, amATS
	} else if r.kind != kTagSend {
		return
	}
	if ep == nil || ep.err != nil || ep.closed {
		return
	}
	ep.ctl(id, (&ack{dst: ep.rid, req: r.peerReq, status: uint8(uct.StatusOf(err))}).encode)
}

// rndvAcked returns the request that an ATS (recv false: one of our
// sends) or ATP (recv true: one of our receives) answers, its endpoint and
// the peer's status; r is nil if the message answers none (lock held).
func (w *Worker) rndvAcked(data []byte, recv bool) (r *Request, ep *Endpoint, st error) {
	m, err := decodeAck(data)
	if err != nil {
		return nil, nil, nil
	}
	ep, r = w.epByID(m.dst), w.slotGet(m.req)
	switch {
	case ep == nil || r == nil:
		return nil, nil, nil
	case recv && (r.kind != kTagRecv || r.rndvSrc != ep):
		return nil, nil, nil
	case !recv && (r.kind != kTagSend && r.kind != kAMSend || r.ep != ep):
		return nil, nil, nil
	case m.status != 0:
		return r, ep, uct.Status(m.status)
	}
	return r, ep, nil
}

// onATS: the receiver has the data of our rendezvous send (tag or AM).
func (w *Worker) onATS(_ any, data []byte, _ uct.AMFlags) {
	w.lockCB()
	defer w.unlockCB()
	r, ep, st := w.rndvAcked(data, false)
	switch {
	case r == nil:
	case st != nil:
		w.complete(r, opErr(kindOp[r.kind], ep.name, fmt.Errorf("receiver: %w", st)))
	default:
		w.complete(r, nil)
	}
}

// onRTR: the receiver asks us to put the data of a rendezvous send.
func (w *Worker) onRTR(_ any, data []byte, _ uct.AMFlags) {
	m, err := decodeRTR(data)
	if err != nil {
		return
	}
	w.lockCB()
	defer w.unlockCB()
	ep := w.epByID(m.dst)
	r := w.slotGet(m.sreq)
	if ep == nil || r == nil || r.ep != ep || r.kind != kTagSend || ep.err != nil {
		return
	}
	r.peerReq = m.rreq
	w.rndvMove(r, ep, true, r.buf[:min(int(m.length), len(r.buf))], m.raddr, m.rkey)
}

// onATP: the sender has put the data of our rendezvous receive.
func (w *Worker) onATP(_ any, data []byte, _ uct.AMFlags) {
	w.lockCB()
	defer w.unlockCB()
	r, ep, st := w.rndvAcked(data, true)
	switch {
	case r == nil:
	case st != nil:
		w.complete(r, opErr("tag_recv", ep.name, fmt.Errorf("sender: %w", st)))
	default:
		w.completeRecvLen(r)
	}
}
