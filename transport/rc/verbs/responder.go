package verbs

import (
	"fmt"

	"github.com/ucgo/ucgo/internal/roce"
	"github.com/ucgo/ucgo/uct"
)

// rdRes is a responder resource: an executed READ or atomic, kept so that
// a duplicate request is answered again without executing it twice.
type rdRes struct {
	atomic bool
	psn    uint32
	npkts  uint32
	data   []byte // READ: the remote memory read
	orig   uint64 // atomic: original value
}

// respItem is one entry of the responder's ordered output.
type respItem struct {
	kind uint8 // itemAck, itemRead, itemAtomic
	psn  uint32
	aeth roce.AETH
	res  *rdRes
	cur  uint32 // READ: next response packet index
}

const (
	itemAck = iota
	itemRead
	itemAtomic
)

// responder is the receive side of a QP.
type responder struct {
	epsn    uint32
	msn     uint32
	nakSent bool // a sequence or RNR NAK for epsn was sent

	inSend  bool // a multi-packet SEND is being received
	recv    recvWQE
	segs    [][]byte
	recvLen uint64
	recvOff uint64

	inWrite  bool // a multi-packet WRITE is being received
	wrBuf    []byte
	wrOff    uint64
	wrLength uint32

	maxRes int
	res    []*rdRes
	out    []respItem
	ackOK  bool // the last item of out is a plain ACK that may be updated
}

func (r *responder) start(psn uint32, maxDest int) {
	*r = responder{epsn: psn, maxRes: max(1, maxDest)}
}

func (r *responder) reset() {
	r.inSend, r.inWrite = false, false
	r.recv = recvWQE{}
	r.segs, r.wrBuf = nil, nil
	r.res = nil
	r.out = r.out[:0]
	r.ackOK = false
}

func (r *responder) addRes(x *rdRes) {
	if len(r.res) >= r.maxRes {
		copy(r.res, r.res[1:])
		r.res = r.res[:len(r.res)-1]
	}
	r.res = append(r.res, x)
}

func (r *responder) queueAck(psn uint32) {
	if r.ackOK && len(r.out) > 0 {
		it := &r.out[len(r.out)-1]
		it.psn = psn
		it.aeth = roce.ACK(roce.CreditsInvalid, r.msn)
		return
	}
	r.out = append(r.out, respItem{kind: itemAck, psn: psn, aeth: roce.ACK(roce.CreditsInvalid, r.msn)})
	r.ackOK = true
}

func (r *responder) queue(it respItem) {
	r.out = append(r.out, it)
	r.ackOK = false
}

// handleRequest processes a request packet (SEND, WRITE, READ, atomic).
func (qp *QP) handleRequest(p *roce.Packet) {
	r := &qp.resp
	d := qp.d
	switch qp.state {
	case QPSRTR, QPSRTS, QPSSQD, QPSSQE:
	default:
		d.ctr.RxDropped++
		return
	}
	psn := p.BTH.PSN
	diff := roce.PSNDiff(psn, r.epsn)
	if diff > 0 {
		// Out of sequence: one NAK until the expected PSN arrives.
		if !r.nakSent {
			r.nakSent = true
			d.ctr.SeqNAKsSent++
			r.queue(respItem{kind: itemAck, psn: r.epsn, aeth: roce.NAK(roce.NAKPSNSequenceError, r.msn)})
			d.markReady(qp)
		}
		return
	}
	if diff < 0 {
		d.ctr.DuplicatesRcvd++
		qp.duplicate(p)
		return
	}
	r.nakSent = false
	if qp.state == QPSRTR {
		// The first request in RTR: communication established.
		qp.d.postEvent(uct.EventCommEstablished, qp.name(), qp, nil)
	}
	op := p.BTH.Opcode
	// Opcode sequence: the middle of a SEND or WRITE continues it.
	switch {
	case r.inSend && !(op.IsSend() && (op.IsMiddle() || op.IsLast())),
		r.inWrite && !(op.IsWrite() && (op.IsMiddle() || op.IsLast())),
		!r.inSend && !r.inWrite && (op.IsMiddle() || op.IsLast()):
		qp.nakFatal(psn, roce.NAKInvalidRequest, uct.EventQPRequestError, WCRemInvReqErr, "opcode %v out of sequence", op)
		return
	}
	switch {
	case op.IsSend():
		if !qp.recvSend(p) {
			return
		}
	case op.IsWrite():
		if !qp.recvWrite(p) {
			return
		}
	case op.IsReadRequest():
		qp.recvRead(p)
		return
	case op.IsAtomic():
		qp.recvAtomic(p)
		return
	default:
		qp.nakFatal(psn, roce.NAKInvalidRequest, uct.EventQPRequestError, WCRemInvReqErr, "opcode %v", op)
		return
	}
	r.epsn = roce.PSNAdd(r.epsn, 1)
	if p.BTH.AckReq {
		r.queueAck(psn)
		if (op.IsLast() || op.IsOnly()) && (op.IsSend() || op.HasImm()) {
			// A receive completed: its consumer may answer at once.
			d.deferAck(qp)
		} else {
			d.markReady(qp)
		}
	}
}

// nakFatal sends a NAK for psn and moves the QP to ERR with an async
// event (responder class C/D errors). A receive in progress completes
// with st.
func (qp *QP) nakFatal(psn uint32, code uint8, ev uct.EventType, st WCStatus, format string, args ...any) {
	r := &qp.resp
	d := qp.d
	// Pending output first, so the NAK is not overtaken by nothing.
	qp.respondLocked(1 << 30)
	p := &d.pkt
	*p = roce.Packet{BTH: roce.BTH{Opcode: roce.OpAcknowledge, PKey: roce.PKeyDefault, DestQP: qp.attr.DestQPN, PSN: psn}}
	p.AETH = roce.NAK(code, r.msn)
	d.emit(p, qp.dst)
	if r.inSend || st == WCLocLenErr || st == WCLocProtErr {
		if r.recv.sg != nil || r.inSend {
			qp.rcq.pushLocked(&WC{WRID: r.recv.id, Status: st, Opcode: WCRecv, QPNum: qp.qpn, SrcQP: qp.attr.DestQPN})
		}
	}
	r.inSend = false
	r.recv = recvWQE{}
	qp.fatalLocked(ev, fmt.Errorf("verbs: %s: "+format+": %w", append([]any{qp.name()}, append(args, uct.ErrRemoteOperation)...)...))
}

// takeRecv pops a receive WQE from the RQ or SRQ.
func (qp *QP) takeRecv() (recvWQE, bool) {
	if qp.srq != nil {
		return qp.srq.popLocked()
	}
	return qp.rq.pop()
}

func (qp *QP) recvAvailable() bool {
	if qp.srq != nil {
		return qp.srq.rq.n > 0
	}
	return qp.rq.n > 0
}

// rnrNak answers a message that found no receive posted.
func (qp *QP) rnrNak(psn uint32) {
	r := &qp.resp
	r.nakSent = true
	qp.d.ctr.RNRNAKsSent++
	r.queue(respItem{kind: itemAck, psn: psn, aeth: roce.RNRNak(qp.attr.MinRNRTimer, r.msn)})
	qp.d.markReady(qp)
}

func (qp *QP) recvSend(p *roce.Packet) bool {
	r := &qp.resp
	op := p.BTH.Opcode
	psn := p.BTH.PSN
	if op.IsFirst() || op.IsOnly() {
		if !qp.recvAvailable() {
			qp.rnrNak(psn)
			return false
		}
		w, _ := qp.takeRecv()
		segs, ok := qp.d.resolveSGEs(qp.pd, w.sg, AccessLocalWrite, r.segs)
		r.recv = w
		if !ok {
			r.inSend = true
			qp.nakFatal(psn, roce.NAKRemoteOperationalError, uct.EventQPFatal, WCLocProtErr, "receive SGE not accessible")
			return false
		}
		r.segs = segs
		r.recvLen = sgLen(w.sg)
		r.recvOff = 0
		r.inSend = true
	}
	n := uint64(len(p.Payload))
	if (op.IsFirst() || op.IsMiddle()) && n != uint64(qp.mtu) {
		qp.nakFatal(psn, roce.NAKInvalidRequest, uct.EventQPRequestError, WCRemInvReqErr, "%v with %d bytes, path MTU %d", op, n, qp.mtu)
		return false
	}
	if r.recvOff+n > r.recvLen {
		qp.nakFatal(psn, roce.NAKInvalidRequest, uct.EventQPRequestError, WCLocLenErr, "message longer than the receive buffer (%d bytes)", r.recvLen)
		return false
	}
	scatter(r.segs, r.recvOff, p.Payload)
	r.recvOff += n
	if op.IsLast() || op.IsOnly() {
		wc := WC{WRID: r.recv.id, Status: WCSuccess, Opcode: WCRecv, ByteLen: uint32(r.recvOff), QPNum: qp.qpn, SrcQP: qp.attr.DestQPN}
		if op.HasImm() {
			wc.Imm = p.Imm
			wc.Flags |= WCWithImm
		}
		if p.BTH.SolicitedEvent {
			wc.Flags |= WCSolicited
		}
		r.inSend = false
		r.recv = recvWQE{}
		r.msn = roce.PSNAdd(r.msn, 1)
		qp.rcq.pushLocked(&wc)
	}
	return true
}

func (qp *QP) recvWrite(p *roce.Packet) bool {
	r := &qp.resp
	op := p.BTH.Opcode
	psn := p.BTH.PSN
	if op.HasImm() && !qp.recvAvailable() {
		qp.rnrNak(psn)
		return false
	}
	if op.IsFirst() || op.IsOnly() {
		if qp.attr.AccessFlags&AccessRemoteWrite == 0 {
			qp.nakFatal(psn, roce.NAKRemoteAccessError, uct.EventQPAccessError, WCRemAccessErr, "QP does not allow remote write")
			return false
		}
		x := p.RETH
		var buf []byte
		if x.DMALen > 0 {
			mr, off, ok := qp.d.lookupMR(qp.pd, x.RKey, x.VA, uint64(x.DMALen), AccessRemoteWrite)
			if !ok {
				qp.nakFatal(psn, roce.NAKRemoteAccessError, uct.EventQPAccessError, WCRemAccessErr, "write rkey %#x va %#x len %d refused", x.RKey, x.VA, x.DMALen)
				return false
			}
			buf = mr.buf[off : off+uint64(x.DMALen)]
		}
		r.wrBuf, r.wrOff, r.wrLength = buf, 0, x.DMALen
		r.inWrite = true
	}
	n := uint64(len(p.Payload))
	if (op.IsFirst() || op.IsMiddle()) && n != uint64(qp.mtu) || r.wrOff+n > uint64(len(r.wrBuf)) ||
		(op.IsLast() || op.IsOnly()) && r.wrOff+n != uint64(len(r.wrBuf)) {
		qp.nakFatal(psn, roce.NAKInvalidRequest, uct.EventQPRequestError, WCRemInvReqErr, "%v length %d does not fit the DMA length %d", op, n, r.wrLength)
		return false
	}
	if !qp.d.rxPlaced {
		raceArrived()
		copy(r.wrBuf[r.wrOff:], p.Payload)
		raceTouched()
	}
	r.wrOff += n
	if op.IsLast() || op.IsOnly() {
		r.inWrite = false
		r.wrBuf = nil
		r.msn = roce.PSNAdd(r.msn, 1)
		if op.HasImm() {
			w, _ := qp.takeRecv()
			qp.rcq.pushLocked(&WC{WRID: w.id, Status: WCSuccess, Opcode: WCRecvRDMAWithImm, Flags: WCWithImm,
				ByteLen: r.wrLength, Imm: p.Imm, QPNum: qp.qpn, SrcQP: qp.attr.DestQPN})
		}
	}
	return true
}

func (qp *QP) recvRead(p *roce.Packet) {
	r := &qp.resp
	psn := p.BTH.PSN
	if qp.attr.AccessFlags&AccessRemoteRead == 0 {
		qp.nakFatal(psn, roce.NAKRemoteAccessError, uct.EventQPAccessError, WCRemAccessErr, "QP does not allow remote read")
		return
	}
	x := p.RETH
	var data []byte
	if x.DMALen > 0 {
		mr, off, ok := qp.d.lookupMR(qp.pd, x.RKey, x.VA, uint64(x.DMALen), AccessRemoteRead)
		if !ok {
			qp.nakFatal(psn, roce.NAKRemoteAccessError, uct.EventQPAccessError, WCRemAccessErr, "read rkey %#x va %#x len %d refused", x.RKey, x.VA, x.DMALen)
			return
		}
		data = mr.buf[off : off+uint64(x.DMALen)]
	}
	mtu := uint64(qp.mtu)
	res := &rdRes{psn: psn, npkts: uint32(max(1, (uint64(x.DMALen)+mtu-1)/mtu)), data: data}
	r.addRes(res)
	r.queue(respItem{kind: itemRead, psn: psn, res: res})
	r.epsn = roce.PSNAdd(r.epsn, int(res.npkts))
	r.msn = roce.PSNAdd(r.msn, 1)
	qp.d.markReady(qp)
}

func (qp *QP) recvAtomic(p *roce.Packet) {
	r := &qp.resp
	psn := p.BTH.PSN
	if qp.attr.AccessFlags&AccessRemoteAtomic == 0 {
		qp.nakFatal(psn, roce.NAKRemoteAccessError, uct.EventQPAccessError, WCRemAccessErr, "QP does not allow remote atomics")
		return
	}
	x := p.Atomic
	if x.VA&7 != 0 {
		qp.nakFatal(psn, roce.NAKInvalidRequest, uct.EventQPRequestError, WCRemInvReqErr, "atomic va %#x not 8-byte aligned", x.VA)
		return
	}
	mr, off, ok := qp.d.lookupMR(qp.pd, x.RKey, x.VA, 8, AccessRemoteAtomic)
	if !ok {
		qp.nakFatal(psn, roce.NAKRemoteAccessError, uct.EventQPAccessError, WCRemAccessErr, "atomic rkey %#x va %#x refused", x.RKey, x.VA)
		return
	}
	var orig uint64
	if p.BTH.Opcode == roce.OpCompareSwap {
		orig = atomicCmpSwap(mr.buf, off, x.Compare, x.SwapAdd)
	} else {
		orig = atomicFetchAdd(mr.buf, off, x.SwapAdd)
	}
	res := &rdRes{atomic: true, psn: psn, npkts: 1, orig: orig}
	r.addRes(res)
	r.queue(respItem{kind: itemAtomic, psn: psn, res: res})
	r.epsn = roce.PSNAdd(r.epsn, 1)
	r.msn = roce.PSNAdd(r.msn, 1)
	qp.d.markReady(qp)
}

// duplicate answers a request the responder has already executed: READs
// and atomics are replayed from the responder resources; a SEND or WRITE
// packet that asks for an ACK (AckReq) is ACKed again with its own PSN, or,
// in the middle of a message, with the latest PSN (which ends no message).
//
// The ACK never reaches past the packets the requester is resending.
// rxe quirk (Linux 6.1 completer, check_psn): an ACK equal to a WQE's last
// PSN completes that WQE even while it is being resent; with a one-entry
// send queue the requester then takes its queue for empty and stops.
// Requesters ask for an ACK on each message's last packet, so nothing they
// wait for goes unanswered.
func (qp *QP) duplicate(p *roce.Packet) {
	r := &qp.resp
	psn := p.BTH.PSN
	op := p.BTH.Opcode
	switch {
	case op.IsReadRequest() || op.IsAtomic():
		for _, res := range r.res {
			d := roce.PSNDiff(psn, res.psn)
			if d < 0 || d >= int32(res.npkts) || res.atomic != op.IsAtomic() {
				continue
			}
			kind := uint8(itemRead)
			if res.atomic {
				kind = itemAtomic
			}
			r.queue(respItem{kind: kind, psn: psn, res: res, cur: uint32(d)})
			qp.d.markReady(qp)
			return
		}
		// Too old to replay: ignore, the requester will time out.
	default:
		if !p.BTH.AckReq {
			return
		}
		ack := psn
		if r.inSend || r.inWrite {
			// In the middle of a message, the latest PSN ends no
			// message, so no requester completes a WQE it is still
			// resending on its ACK; and a go-back-N requester skips
			// ahead to what has arrived instead of resending it all.
			ack = roce.PSNAdd(r.epsn, -1)
		}
		if n := len(r.out); r.ackOK && n > 0 && roce.PSNDiff(r.out[n-1].psn, ack) >= 0 {
			// The ACK waiting to leave covers it already (it is
			// never moved back).
		} else {
			r.queueAck(ack)
		}
		qp.d.markReady(qp)
	}
}

// respondLocked emits queued responder output, at most budget packets,
// and returns the budget left.
func (qp *QP) respondLocked(budget int) int {
	r := &qp.resp
	d := qp.d
	p := &d.pkt
	mtu := uint64(qp.mtu)
	k := 0
	for k < len(r.out) && budget > 0 {
		it := &r.out[k]
		*p = roce.Packet{BTH: roce.BTH{PKey: roce.PKeyDefault, DestQP: qp.attr.DestQPN}}
		switch it.kind {
		case itemAck:
			p.BTH.Opcode = roce.OpAcknowledge
			p.BTH.PSN = it.psn
			p.AETH = it.aeth
			d.emit(p, qp.dst)
			budget--
		case itemAtomic:
			p.BTH.Opcode = roce.OpAtomicAcknowledge
			p.BTH.PSN = it.res.psn
			p.AETH = roce.ACK(roce.CreditsInvalid, r.msn)
			p.AtomicAck = it.res.orig
			d.emit(p, qp.dst)
			budget--
		case itemRead:
			res := it.res
			raceArrived()
			for it.cur < res.npkts && budget > 0 {
				i := it.cur
				first, last := i == 0, i == res.npkts-1
				off := uint64(i) * mtu
				end := min(off+mtu, uint64(len(res.data)))
				p.BTH.PSN = roce.PSNAdd(res.psn, int(i))
				switch {
				case first && last:
					p.BTH.Opcode = roce.OpReadResponseOnly
				case first:
					p.BTH.Opcode = roce.OpReadResponseFirst
				case last:
					p.BTH.Opcode = roce.OpReadResponseLast
				default:
					p.BTH.Opcode = roce.OpReadResponseMiddle
				}
				p.AETH = roce.ACK(roce.CreditsInvalid, r.msn)
				if off < end {
					p.Payload = res.data[off:end]
				} else {
					p.Payload = nil
				}
				d.emitRef(p, qp.dst) // MR memory
				it.cur++
				budget--
			}
			raceTouched()
			if it.cur < res.npkts {
				// Out of budget: the rest on the next pass.
				r.out = r.out[k:]
				d.markReady(qp)
				return budget
			}
		}
		k++
	}
	n := copy(r.out, r.out[k:])
	r.out = r.out[:n]
	if n == 0 {
		r.ackOK = false
	} else {
		// The budget ran out at the end of an item: the rest on the
		// next pass, or it waits for the next request.
		d.markReady(qp)
	}
	return budget
}
