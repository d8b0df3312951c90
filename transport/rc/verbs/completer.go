package verbs

import (
	"encoding/binary"

	"github.com/ucgo/ucgo/internal/roce"
)

// handleResponse processes an ACK, NAK, READ response or atomic ACK for
// the QP's requester.
func (qp *QP) handleResponse(p *roce.Packet) {
	r := &qp.req
	switch qp.state {
	case QPSRTS, QPSSQD, QPSSQE:
	default:
		qp.d.ctr.RxDropped++
		return
	}
	psn := p.BTH.PSN
	// A response acknowledges a PSN in [comp, psn): anything else is stale
	// (a duplicate) or was never sent.
	if roce.PSNDiff(psn, r.comp) < 0 || roce.PSNDiff(psn, r.maxPSN) >= 0 {
		qp.d.ctr.DuplicatesRcvd++
		return
	}
	op := p.BTH.Opcode
	switch {
	case op == roce.OpAcknowledge:
		qp.handleAETH(p)
	case op.IsReadResponse():
		qp.handleReadResponse(p)
	case op == roce.OpAtomicAcknowledge:
		qp.handleAtomicAck(p)
	default:
		qp.d.ctr.RxDropped++
		return
	}
	qp.afterProgress()
}

// afterProgress re-arms or stops the ACK timer and reports SQ drained.
func (qp *QP) afterProgress() {
	r := &qp.req
	if qp.state == QPSErr {
		return
	}
	if roce.PSNDiff(r.comp, r.psn) > 0 {
		// Acknowledged beyond a go-back-N restart point: skip ahead.
		r.psn = r.comp
		if r.next != r.tail {
			if w := r.at(r.next); w.started {
				if d := roce.PSNDiff(r.psn, w.psn); d >= 0 && d < int32(w.npkts) {
					r.sent = uint32(d)
				}
			}
		}
	}
	if r.comp == r.psn {
		r.deadline = 0
	} else if r.timeout != 0 {
		r.deadline = qp.d.now() + r.timeout
		qp.d.armTimer(qp)
	}
	if r.next != r.tail || r.comp != r.psn {
		qp.d.markReady(qp)
	}
	qp.checkDrainedLocked()
}

func (qp *QP) handleAETH(p *roce.Packet) {
	r := &qp.req
	psn := p.BTH.PSN
	a := p.AETH
	switch a.Kind() {
	case roce.AckACK:
		qp.ackThrough(psn)
	case roce.AckRNRNak:
		qp.d.ctr.RNRNAKsRcvd++
		qp.ackThrough(roce.PSNAdd(psn, -1))
		if qp.state == QPSErr || r.head == r.tail {
			return
		}
		if r.rnrLeft == 0 {
			qp.failHead(WCRNRRetryExcErr, uint32(a.Syndrome))
			return
		}
		if r.rnrLeft != 7 {
			r.rnrLeft--
		}
		qp.goBack(psn)
		r.recovering = false
		r.rnrUntil = qp.d.now() + int64(roce.RNRTimer(a.RNRTimer()))
		qp.d.armTimer(qp)
	case roce.AckNAK:
		qp.ackThrough(roce.PSNAdd(psn, -1))
		if qp.state == QPSErr || r.head == r.tail {
			return
		}
		switch a.NAKCode() {
		case roce.NAKPSNSequenceError:
			qp.d.ctr.SeqNAKsRcvd++
			if r.recovering {
				return
			}
			if r.retryLeft == 0 {
				qp.failHead(WCRetryExcErr, uint32(a.Syndrome))
				return
			}
			r.retryLeft--
			r.win.gap()
			qp.goBack(psn)
		case roce.NAKRemoteAccessError:
			qp.failHead(WCRemAccessErr, uint32(a.Syndrome))
		case roce.NAKRemoteOperationalError:
			qp.failHead(WCRemOpErr, uint32(a.Syndrome))
		case roce.NAKInvalidRDRequest:
			qp.failHead(WCRemInvRDReqErr, uint32(a.Syndrome))
		default:
			qp.failHead(WCRemInvReqErr, uint32(a.Syndrome))
		}
	default:
		qp.d.ctr.RxDropped++
	}
}

// failHead completes the oldest WQE with an error, moves the QP to ERR
// and flushes the rest (a completion error: no async event).
func (qp *QP) failHead(st WCStatus, vendor uint32) {
	r := &qp.req
	if r.head == r.tail {
		qp.toErrLocked()
		return
	}
	w := r.at(r.head)
	qp.scq.pushLocked(&WC{WRID: w.wr.ID, Status: st, Opcode: wcOpcodeOf(w.wr.Opcode), QPNum: qp.qpn, VendorErr: vendor})
	w.recycle()
	r.head++
	if r.next < r.head {
		r.next, r.sent = r.head, 0
	}
	qp.toErrLocked()
}

// ackThrough completes the WQEs acknowledged by an ACK of psn. A READ or
// atomic WQE the ACK passes without its response means the response was
// lost: it is re-requested.
func (qp *QP) ackThrough(psn uint32) {
	r := &qp.req
	if roce.PSNDiff(psn, r.comp) < 0 {
		return
	}
	from := r.comp
	progressed := false
	for r.head != r.tail {
		w := r.at(r.head)
		if !w.started {
			break
		}
		if w.wr.Opcode.needsResponse() {
			if !w.done {
				if roce.PSNDiff(psn, w.psn) >= 0 && !r.recovering {
					// Implied NAK: later requests were executed.
					if r.retryLeft == 0 {
						qp.failHead(WCRetryExcErr, 0)
						return
					}
					r.retryLeft--
					r.win.gap()
					qp.goBack(r.comp)
				}
				break
			}
		} else if roce.PSNDiff(w.lastPSN(), psn) > 0 {
			// Partly acknowledged.
			if roce.PSNDiff(psn, r.comp) >= 0 {
				r.comp = roce.PSNAdd(psn, 1)
				progressed = true
			}
			break
		}
		r.comp = roce.PSNAdd(w.lastPSN(), 1)
		progressed = true
		qp.completeSendLocked(w, WCSuccess)
		if qp.state == QPSErr {
			return
		}
	}
	if progressed {
		r.win.grow(roce.PSNDiff(r.comp, from))
		r.retryLeft = r.retryCnt
		r.rnrLeft = r.rnrRetry
		r.recovering = false
	}
}

// headResponseWQE returns the WQE a READ response or atomic ACK with psn
// belongs to, completing earlier WQEs it implicitly acknowledges.
func (qp *QP) responseWQE(psn uint32) *sendWQE {
	r := &qp.req
	for r.head != r.tail {
		w := r.at(r.head)
		if !w.started {
			return nil
		}
		if w.wr.Opcode.needsResponse() {
			d := roce.PSNDiff(psn, w.psn)
			if d >= 0 && d < int32(w.npkts) {
				return w
			}
			if !w.done {
				return nil
			}
		} else if roce.PSNDiff(w.lastPSN(), psn) >= 0 {
			return nil
		}
		r.comp = roce.PSNAdd(w.lastPSN(), 1)
		qp.completeSendLocked(w, WCSuccess)
	}
	return nil
}

func (qp *QP) handleReadResponse(p *roce.Packet) {
	r := &qp.req
	psn := p.BTH.PSN
	if roce.PSNDiff(psn, r.comp) > 0 {
		// A response is missing: re-request from the first missing one.
		if !r.recovering {
			if r.retryLeft == 0 {
				qp.failHead(WCRetryExcErr, 0)
				return
			}
			r.retryLeft--
			qp.d.ctr.ReadRetries++
			r.win.gap()
			qp.goBack(r.comp)
		}
		return
	}
	w := qp.responseWQE(psn)
	if w == nil || !w.wr.Opcode.isRead() {
		qp.d.ctr.RxDropped++
		return
	}
	if p.BTH.Opcode.HasAETH() && p.AETH.Kind() != roce.AckACK {
		qp.handleAETH(p)
		return
	}
	idx := uint64(roce.PSNDiff(psn, w.psn))
	mtu := uint64(qp.mtu)
	off := idx * mtu
	n := uint64(len(p.Payload))
	op := p.BTH.Opcode
	last := idx == uint64(w.npkts)-1
	wantLast := op == roce.OpReadResponseLast || op == roce.OpReadResponseOnly
	wantFirst := op == roce.OpReadResponseFirst || op == roce.OpReadResponseOnly
	if last != wantLast || (idx == 0) != wantFirst || off+n > w.length || (!last && n != mtu) || (last && off+n != w.length) {
		qp.failHead(WCBadRespErr, 0)
		return
	}
	if !qp.d.rxPlaced {
		scatter(w.segs, off, p.Payload)
	}
	w.got = off + n
	r.win.grow(roce.PSNDiff(roce.PSNAdd(psn, 1), r.comp))
	r.comp = roce.PSNAdd(psn, 1)
	r.retryLeft = r.retryCnt
	r.recovering = false
	if last {
		w.done = true
		qp.completeSendLocked(w, WCSuccess)
	}
}

func (qp *QP) handleAtomicAck(p *roce.Packet) {
	r := &qp.req
	psn := p.BTH.PSN
	if roce.PSNDiff(psn, r.comp) > 0 {
		if !r.recovering {
			if r.retryLeft == 0 {
				qp.failHead(WCRetryExcErr, 0)
				return
			}
			r.retryLeft--
			r.win.gap()
			qp.goBack(r.comp)
		}
		return
	}
	w := qp.responseWQE(psn)
	if w == nil || !w.wr.Opcode.isAtomic() {
		qp.d.ctr.RxDropped++
		return
	}
	if p.AETH.Kind() != roce.AckACK {
		qp.handleAETH(p)
		return
	}
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], p.AtomicAck)
	scatter(w.segs, 0, b[:])
	r.win.grow(roce.PSNDiff(roce.PSNAdd(psn, 1), r.comp))
	r.comp = roce.PSNAdd(psn, 1)
	r.retryLeft = r.retryCnt
	r.recovering = false
	w.done = true
	qp.completeSendLocked(w, WCSuccess)
}

// timerLocked runs the QP's due timers: RNR wait over, local ACK timeout.
func (qp *QP) timerLocked(now int64) {
	r := &qp.req
	if r.rnrUntil != 0 && now >= r.rnrUntil {
		r.rnrUntil = 0
		r.deadline = now + r.timeout
		if r.timeout == 0 {
			r.deadline = 0
		}
		qp.d.markReady(qp)
	}
	if r.deadline != 0 && now >= r.deadline && r.rnrUntil == 0 {
		if r.comp == r.psn {
			r.deadline = 0
			return
		}
		qp.d.ctr.Timeouts++
		if r.retryLeft == 0 {
			qp.failHead(WCRetryExcErr, 0)
			return
		}
		r.retryLeft--
		r.recovering = false
		r.win.timedOut()
		qp.goBack(r.comp)
		r.deadline = now + r.timeout
	}
}

// nextDeadline returns the QP's earliest armed timer (0: none).
func (qp *QP) nextDeadline() int64 {
	r := &qp.req
	if qp.state == QPSErr || qp.state == QPSReset {
		return 0
	}
	t := r.deadline
	if r.rnrUntil != 0 {
		t = r.rnrUntil
	}
	return t
}
