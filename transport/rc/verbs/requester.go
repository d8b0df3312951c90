package verbs

import (
	"fmt"

	"github.com/ucgo/ucgo/internal/roce"
	"github.com/ucgo/ucgo/uct"
)

const (
	// ackEvery: every ackEvery-th packet of a long message asks for an
	// ACK (besides the last one), so the window keeps moving.
	ackEvery = 32
	// txBudget bounds the packets one QP emits per engine pass.
	txBudget = 256
)

// sendWQE is a posted send work request and its transmission state.
type sendWQE struct {
	wr       SendWR
	inline   []byte
	segs     [][]byte // local memory of the SGEs, resolved when started
	length   uint64
	signaled bool
	started  bool
	done     bool // READ/atomic: response received
	psn      uint32
	npkts    uint32 // PSNs the WR uses
	got      uint64 // READ: bytes received

	// Storage kept across uses of the SQ slot, so that posting does not
	// allocate: the copy of the SGE list and the inline data.
	sgBuf  []SGE
	inlBuf []byte
}

// recycle empties w for its next use, keeping its storage.
func (w *sendWQE) recycle() {
	clear(w.segs) // no MR memory kept reachable
	*w = sendWQE{sgBuf: w.sgBuf[:0], inlBuf: w.inlBuf[:0], segs: w.segs[:0]}
}

func (w *sendWQE) lastPSN() uint32 { return roce.PSNAdd(w.psn, int(w.npkts)-1) }

// requester is the send side of a QP: SQ, PSNs, retransmission.
type requester struct {
	sq         []sendWQE
	head       uint64 // oldest WQE not completed
	next       uint64 // next WQE to transmit (or being transmitted)
	tail       uint64 // next free slot
	sent       uint32 // packets of sq[next] already sent
	psn        uint32 // next PSN to send
	comp       uint32 // oldest PSN not acknowledged
	maxPSN     uint32 // one past the highest PSN ever sent
	rdOut      int    // READs/atomics in [head, next)
	sinceAck   int
	retryCnt   uint8
	rnrRetry   uint8
	retryLeft  uint8
	rnrLeft    uint8
	timeout    int64 // local ACK timeout in ns; 0 = infinite
	maxRd      int
	deadline   int64 // local ACK timer; 0 = not armed
	rnrUntil   int64 // RNR wait; 0 = not waiting
	recovering bool  // a go-back-N restart is under way
	win        cwnd  // PSNs allowed outstanding (cwnd.go)
}

func (r *requester) init(c QPCap) { r.sq = make([]sendWQE, c.MaxSendWR) }

func (r *requester) applyAttr(a *QPAttr, m QPAttrMask) {
	if m&QPAttrRetryCnt != 0 {
		r.retryCnt, r.retryLeft = a.RetryCnt, a.RetryCnt
	}
	if m&QPAttrRNRRetry != 0 {
		r.rnrRetry, r.rnrLeft = a.RNRRetry, a.RNRRetry
	}
	if m&QPAttrTimeout != 0 {
		r.timeout = int64(roce.LocalAckTimeout(a.Timeout))
	}
	if m&QPAttrMaxQPRdAtomic != 0 {
		r.maxRd = max(1, int(a.MaxRdAtomic))
	}
}

// setPSN sets the next PSN to send after sending up to psn-1.
func (r *requester) setPSN(psn uint32) {
	r.psn = psn
	if roce.PSNDiff(psn, r.maxPSN) > 0 {
		r.maxPSN = psn
	}
}

func (r *requester) start(psn uint32) {
	r.psn, r.comp, r.maxPSN = psn, psn, psn
	r.sent, r.sinceAck = 0, 0
	r.deadline, r.rnrUntil = 0, 0
	r.recovering = false
	r.win.reset()
}

func (r *requester) reset() {
	for i := range r.sq {
		r.sq[i] = sendWQE{}
	}
	r.head, r.next, r.tail = 0, 0, 0
	r.rdOut = 0
	r.start(0)
}

func (r *requester) outstanding() bool { return r.head != r.tail }

func (r *requester) at(i uint64) *sendWQE { return &r.sq[i%uint64(len(r.sq))] }

// flush completes every WQE not yet completed with WRFlushErr.
func (r *requester) flush(qp *QP) {
	for r.head != r.tail {
		w := r.at(r.head)
		qp.scq.pushLocked(&WC{WRID: w.wr.ID, Status: WCWRFlushErr, Opcode: wcOpcodeOf(w.wr.Opcode), QPNum: qp.qpn})
		w.recycle()
		r.head++
	}
	r.next = r.head
	r.rdOut = 0
	r.deadline, r.rnrUntil = 0, 0
}

// PostSend posts send work requests (ibv_post_send). It returns how many
// were posted and, if not all, why the next one was refused: a bad
// request (uct.ErrInvalidParam), a full send queue (uct.ErrNoResource),
// a QP not in RTS/SQD/ERR, or a port that is down (uct.ErrRouteLost). In
// ERR, requests complete at once with WRFlushErr. The packets of new
// messages of up to postCopyMax bytes are copied into the device's
// transmit batch, which goes out with the next engine pass or wait (see
// the package documentation), so that a burst of posts leaves in one
// sendmmsg; larger ones are sent from where they lie before PostSend
// returns. Either way the caller may reuse the memory once PostSend has
// returned, as before the doorbell was deferred.
func (qp *QP) PostSend(wrs ...SendWR) (int, error) {
	racePosted()
	d := qp.d
	d.mu.Lock()
	defer d.mu.Unlock()
	n, err := qp.postSendLocked(wrs)
	if n > 0 && qp.state == QPSRTS {
		refs := len(d.tx.refs)
		d.posting = true
		qp.sendLocked()
		d.posting = false
		if len(d.tx.refs) != refs {
			d.flushTx()
		}
	}
	return n, err
}

// postCopyMax is the largest message whose packets PostSend copies into
// the transmit batch (see PostSend): 64 KiB and 64 bytes of an upper
// layer's headers, so that a stream of messages up to 64 KiB (ucp eager
// fragments, uct puts) is batched as smaller ones are rather than
// leaving by reference with a send call each. The copy costs no extra
// pass over the payload: it is made in the pass that computes the ICRC,
// whose carry-less multiplications bound it. Larger messages leave by
// reference, in pieces the peer starts receiving while the rest is built.
const postCopyMax = 64<<10 + 64

func (qp *QP) postSendLocked(wrs []SendWR) (int, error) {
	r := &qp.req
	if qp.destroyed {
		return 0, fmt.Errorf("verbs: post send %s: %w", qp.name(), uct.ErrClosed)
	}
	switch qp.state {
	case QPSRTS, QPSSQD, QPSErr:
	default:
		return 0, fmt.Errorf("verbs: post send %s in %v: %w", qp.name(), qp.state, uct.ErrInvalidParam)
	}
	if qp.state != QPSErr && qp.d.state != PortActive {
		return 0, fmt.Errorf("verbs: post send %s: port %s is down: %w", qp.name(), qp.d.name, uct.ErrRouteLost)
	}
	for i := range wrs {
		wr := &wrs[i]
		if err := qp.checkSendWR(wr); err != nil {
			return i, fmt.Errorf("verbs: post send %s: wr %d: %w", qp.name(), i, err)
		}
		if r.tail-r.head == uint64(len(r.sq)) {
			return i, fmt.Errorf("verbs: post send %s: send queue full: %w", qp.name(), uct.ErrNoResource)
		}
		w := r.at(r.tail)
		w.recycle()
		w.wr, w.length, w.signaled = *wr, sgLen(wr.SG), qp.sig || wr.Flags&SendSignaled != 0
		w.sgBuf = append(w.sgBuf, wr.SG...)
		w.wr.SG = w.sgBuf
		if wr.Flags&SendInline != 0 {
			// Inline data is copied now, from the caller's MRs without
			// a key check (as a provider copies from virtual memory).
			if uint64(cap(w.inlBuf)) < w.length {
				w.inlBuf = make([]byte, max(w.length, 64))
			}
			w.inline = w.inlBuf[:w.length:w.length]
			pos := 0
			for _, s := range wr.SG {
				b := qp.d.inlineBytes(s)
				if b == nil && s.Length > 0 {
					w.recycle()
					return i, fmt.Errorf("verbs: post send %s: inline SGE %#x+%d is not registered memory: %w", qp.name(), s.Addr, s.Length, uct.ErrInvalidParam)
				}
				pos += copy(w.inline[pos:], b)
			}
		}
		r.tail++
		if qp.state == QPSErr {
			qp.completeSendLocked(w, WCWRFlushErr)
		}
	}
	return len(wrs), nil
}

func (qp *QP) checkSendWR(wr *SendWR) error {
	if len(wr.SG) > qp.cap.MaxSendSGE {
		return fmt.Errorf("%d SGEs > %d: %w", len(wr.SG), qp.cap.MaxSendSGE, uct.ErrInvalidParam)
	}
	n := sgLen(wr.SG)
	switch wr.Opcode {
	case WRSend, WRSendWithImm, WRRDMAWrite, WRRDMAWriteWithImm:
		if wr.Flags&SendInline != 0 && n > uint64(qp.cap.MaxInlineData) {
			return fmt.Errorf("inline %d bytes > %d: %w", n, qp.cap.MaxInlineData, uct.ErrInvalidParam)
		}
	case WRRDMARead:
		if wr.Flags&SendInline != 0 {
			return fmt.Errorf("inline READ: %w", uct.ErrInvalidParam)
		}
	case WRAtomicCmpAndSwp, WRAtomicFetchAndAdd:
		if n != 8 || len(wr.SG) != 1 || wr.Flags&SendInline != 0 {
			return fmt.Errorf("atomic needs one 8-byte SGE: %w", uct.ErrInvalidParam)
		}
	default:
		return fmt.Errorf("opcode %v: %w", wr.Opcode, uct.ErrInvalidParam)
	}
	if n > 1<<31 {
		return fmt.Errorf("length %d > 2 GiB: %w", n, uct.ErrInvalidParam)
	}
	return nil
}

// inlineBytes returns the registered memory an inline SGE names, looked
// up by address in any MR of the device.
func (d *Device) inlineBytes(s SGE) []byte {
	if mr := d.mrs[s.LKey>>8]; mr != nil && s.Addr >= mr.addr && s.Addr-mr.addr+uint64(s.Length) <= uint64(len(mr.buf)) {
		off := s.Addr - mr.addr
		return mr.buf[off : off+uint64(s.Length)]
	}
	return nil
}

// completeSendLocked completes the WQE at the head of the SQ.
func (qp *QP) completeSendLocked(w *sendWQE, st WCStatus) {
	r := &qp.req
	if st != WCSuccess || w.signaled {
		wc := WC{WRID: w.wr.ID, Status: st, Opcode: wcOpcodeOf(w.wr.Opcode), QPNum: qp.qpn}
		if st == WCSuccess && w.wr.Opcode.needsResponse() {
			wc.ByteLen = uint32(w.length)
		}
		qp.scq.pushLocked(&wc)
	}
	if w.wr.Opcode.needsResponse() && r.head < r.next && r.rdOut > 0 {
		r.rdOut--
	}
	w.recycle()
	r.head++
	if r.next < r.head {
		r.next, r.sent = r.head, 0
	}
}

// sendLocked emits the packets the QP may send now: responder output
// first (ACKs, READ responses), then new or retransmitted requests.
func (qp *QP) sendLocked() {
	d := qp.d
	budget := txBudget
	budget = qp.respondLocked(budget)
	r := &qp.req
	if qp.state != QPSRTS && qp.state != QPSSQD {
		return
	}
	if r.rnrUntil != 0 {
		return
	}
	for r.next != r.tail && budget > 0 {
		if roce.PSNDiff(r.psn, r.comp) >= r.win.size {
			break
		}
		w := r.at(r.next)
		if w.wr.Opcode.isRead() && r.comp != r.psn && roce.PSNDiff(r.psn, r.comp)+int32(qp.readPkts(w)) > r.win.size {
			// A READ's responses all come at once: keep them within the
			// window too, or a burst overflows the receive buffer and
			// loses its tail, which only the ACK timer recovers.
			break
		}
		if r.sent == 0 && !w.started {
			if qp.state == QPSSQD {
				break
			}
			if w.wr.Flags&SendFence != 0 && r.rdOut > 0 {
				break
			}
			if w.wr.Opcode.needsResponse() && r.rdOut >= r.maxRd {
				break
			}
			if !qp.startWQE(w) {
				return
			}
		}
		budget -= qp.emitRequest(w, budget)
	}
	if budget <= 0 && r.next != r.tail && roce.PSNDiff(r.psn, r.comp) < r.win.size {
		// Out of budget with the window still open: the rest on the next
		// pass, not only once an ACK arrives.
		d.markReady(qp)
	}
	if r.comp != r.psn && r.deadline == 0 && r.timeout != 0 {
		r.deadline = d.now() + r.timeout
		d.armTimer(qp)
	}
}

// startWQE assigns PSNs and resolves local memory. On a local error it
// completes the WQE with it and moves the QP to ERR.
func (qp *QP) startWQE(w *sendWQE) bool {
	r := &qp.req
	need := Access(0)
	if w.wr.Opcode.needsResponse() {
		need = AccessLocalWrite
	}
	if w.inline == nil {
		segs, ok := qp.d.resolveSGEs(qp.pd, w.wr.SG, need, w.segs)
		if !ok {
			qp.completeSendLocked(w, WCLocProtErr)
			qp.toErrLocked()
			return false
		}
		w.segs = segs
	}
	w.started = true
	w.psn = r.psn
	mtu := uint64(qp.mtu)
	switch {
	case w.wr.Opcode.isAtomic():
		w.npkts = 1
	default:
		w.npkts = uint32(max(1, (w.length+mtu-1)/mtu))
	}
	return true
}

// readPkts returns how many responses the (re)issue of READ w asks for.
func (qp *QP) readPkts(w *sendWQE) uint32 {
	r := &qp.req
	if w.started {
		return w.npkts - r.sent
	}
	mtu := uint64(qp.mtu)
	return uint32(max(1, (w.length+mtu-1)/mtu))
}

// emitRequest sends packets of w starting at r.sent and returns how many.
func (qp *QP) emitRequest(w *sendWQE, budget int) int {
	r := &qp.req
	d := qp.d
	p := &d.pkt
	mtu := uint64(qp.mtu)
	base := roce.BTH{PKey: roce.PKeyDefault, DestQP: qp.attr.DestQPN}
	switch {
	case w.wr.Opcode.isRead():
		*p = roce.Packet{BTH: base}
		off := uint64(r.sent) * mtu
		p.BTH.Opcode = roce.OpReadRequest
		p.BTH.PSN = r.psn
		p.BTH.AckReq = true
		p.RETH = roce.RETH{VA: w.wr.RemoteAddr + off, RKey: w.wr.RKey, DMALen: uint32(w.length - off)}
		d.emit(p, qp.dst)
		r.setPSN(roce.PSNAdd(w.psn, int(w.npkts)))
		r.next++
		r.sent = 0
		r.rdOut++
		return 1
	case w.wr.Opcode.isAtomic():
		*p = roce.Packet{BTH: base}
		p.BTH.Opcode = roce.OpFetchAdd
		if w.wr.Opcode == WRAtomicCmpAndSwp {
			p.BTH.Opcode = roce.OpCompareSwap
			p.Atomic = roce.AtomicETH{VA: w.wr.RemoteAddr, RKey: w.wr.RKey, SwapAdd: w.wr.Swap, Compare: w.wr.CompareAdd}
		} else {
			p.Atomic = roce.AtomicETH{VA: w.wr.RemoteAddr, RKey: w.wr.RKey, SwapAdd: w.wr.CompareAdd}
		}
		p.BTH.PSN = r.psn
		p.BTH.AckReq = true
		d.emit(p, qp.dst)
		r.setPSN(roce.PSNAdd(r.psn, 1))
		r.next++
		r.sent = 0
		r.rdOut++
		return 1
	}
	k := 0
	for k < budget && r.sent < w.npkts && roce.PSNDiff(r.psn, r.comp) < r.win.size {
		i := r.sent
		last := i == w.npkts-1
		stable := qp.dataPacket(w, i, p)
		if d.posting && w.length <= postCopyMax {
			stable = false
		}
		p.BTH.PSN = r.psn
		r.sinceAck++
		if last || r.sinceAck >= ackEvery || roce.PSNDiff(r.psn, r.comp) >= r.win.size-1 {
			p.BTH.AckReq = true
			r.sinceAck = 0
		}
		d.emitPacket(p, qp.dst, stable)
		r.setPSN(roce.PSNAdd(r.psn, 1))
		r.sent++
		k++
	}
	if r.sent == w.npkts {
		r.next++
		r.sent = 0
	}
	return k
}

// dataPacket fills p with packet i of SEND or WRITE w (its PSN is
// w.psn+i), without the AckReq bit, and says whether its payload aliases
// memory that stays untouched until the batch is flushed (see payload).
func (qp *QP) dataPacket(w *sendWQE, i uint32, p *roce.Packet) (stable bool) {
	mtu := uint64(qp.mtu)
	first, last := i == 0, i == w.npkts-1
	off := uint64(i) * mtu
	n := min(mtu, w.length-off)
	*p = roce.Packet{BTH: roce.BTH{PKey: roce.PKeyDefault, DestQP: qp.attr.DestQPN}}
	p.BTH.Opcode = requestOpcode(w.wr.Opcode, first, last)
	p.BTH.PSN = roce.PSNAdd(w.psn, int(i))
	if last && w.wr.Flags&SendSolicited != 0 {
		p.BTH.SolicitedEvent = true
	}
	if p.BTH.Opcode.HasRETH() {
		p.RETH = roce.RETH{VA: w.wr.RemoteAddr, RKey: w.wr.RKey, DMALen: uint32(w.length)}
	}
	if p.BTH.Opcode.HasImm() {
		p.Imm = w.wr.Imm
	}
	p.Payload, stable = w.payload(off, n, &qp.d.scratch)
	return stable
}

// payload returns n bytes of w's data at off, aliasing MR memory (or
// w's inline copy) when they lie in one SGE, and gathered into scratch
// otherwise. stable says that they alias: they stay untouched until the
// batch they are emitted into is flushed, while scratch is reused by the
// next packet.
func (w *sendWQE) payload(off, n uint64, scratch *[]byte) (b []byte, stable bool) {
	if n == 0 {
		return nil, false
	}
	if w.inline != nil {
		return w.inline[off : off+n], true
	}
	pos := off
	for _, s := range w.segs {
		if pos < uint64(len(s)) {
			if pos+n <= uint64(len(s)) {
				return s[pos : pos+n], true
			}
			break
		}
		pos -= uint64(len(s))
	}
	if uint64(cap(*scratch)) < n {
		*scratch = make([]byte, n)
	}
	b = (*scratch)[:n]
	gather(b, w.segs, off)
	return b, false
}

func requestOpcode(op WROpcode, first, last bool) roce.Opcode {
	imm := op == WRSendWithImm || op == WRRDMAWriteWithImm
	if op == WRSend || op == WRSendWithImm {
		switch {
		case first && last && imm:
			return roce.OpSendOnlyImm
		case first && last:
			return roce.OpSendOnly
		case first:
			return roce.OpSendFirst
		case last && imm:
			return roce.OpSendLastImm
		case last:
			return roce.OpSendLast
		}
		return roce.OpSendMiddle
	}
	switch {
	case first && last && imm:
		return roce.OpWriteOnlyImm
	case first && last:
		return roce.OpWriteOnly
	case first:
		return roce.OpWriteFirst
	case last && imm:
		return roce.OpWriteLastImm
	case last:
		return roce.OpWriteLast
	}
	return roce.OpWriteMiddle
}

// goBack restarts transmission at psn (go-back-N).
func (qp *QP) goBack(psn uint32) {
	r := &qp.req
	qp.d.ctr.Retransmits++
	for i := r.head; i != r.tail; i++ {
		w := r.at(i)
		if !w.started {
			break
		}
		if d := roce.PSNDiff(psn, w.psn); d >= 0 && d < int32(w.npkts) {
			r.next = i
			r.sent = uint32(d)
			r.psn = psn
			break
		}
	}
	r.rdOut = 0
	for i := r.head; i != r.next; i++ {
		if w := r.at(i); w.wr.Opcode.needsResponse() && w.started {
			r.rdOut++
		}
	}
	r.recovering = true
	r.sinceAck = 0
	qp.d.markReady(qp)
}
