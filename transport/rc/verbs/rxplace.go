package verbs

import (
	"net/netip"

	"github.com/ucgo/ucgo/internal/roce"
)

// Placing the middle of a long transfer while its ICRC is checked.
//
// Most packets of a long RDMA WRITE or READ are middles: their payload
// goes to the next MTU of a buffer the receiver's own state already
// names (the responder's write position, the head READ's offset of the
// expected PSN), and nothing in them is acted on but that placement and
// the PSN. For those, handle copies the payload to its place and checks
// the ICRC in one pass over it (roce.CopyCheck), instead of a pass for
// the ICRC and another for the copy, and only then lets the responder or
// completer act on the packet, which then does not copy it again
// (Device.rxPlaced). The destination is chosen from the receiver's state
// before the packet is trusted, and only a packet with exactly the
// expected PSN qualifies, so a corrupt packet spoils nothing but bytes
// of the same transfer that no good packet has filled yet, which the
// retransmission of that PSN fills: RDMA gives that memory no content
// until the transfer completes. Everything else, first and only packets
// (their RETH names the buffer), lasts of READs (their AETH is acted
// on) and packets out of sequence, takes the ordinary path: ICRC first.

// isPlaceable reports whether opcode o may be placed while checked.
func isPlaceable(o roce.Opcode) bool {
	return o == roce.OpWriteMiddle || o == roce.OpWriteLast || o == roce.OpReadResponseMiddle
}

// handlePlaced handles b (segment k of its datagram, see handle) if it
// is a placeable packet whose place the receiver's state names (it then
// returns true, the packet handled or, with a bad ICRC, counted and
// dropped); otherwise it returns false and handle takes the ordinary
// path.
func (d *Device) handlePlaced(b []byte, src netip.AddrPort, k uint16) bool {
	if len(b) < roce.BTHLen || !isPlaceable(roce.Opcode(b[0])) {
		return false
	}
	p := &d.pkt
	if err := roce.Decode(b, p); err != nil {
		return false
	}
	qp := d.qps[p.BTH.DestQP]
	if qp == nil || qp.dst.Addr() != src.Addr() {
		return false
	}
	var w *sendWQE
	var off uint64
	var dst []byte
	ok := false
	if p.BTH.Opcode.IsResponse() {
		w, off, ok = qp.readPlace(p)
	} else {
		dst, ok = qp.writePlace(p)
	}
	c := &d.rxCheck
	if !ok || c.Start(b, p.HeaderLen(), src, d.local, k) != nil {
		return false
	}
	if w != nil {
		scatterChecked(c, w.segs, off, len(p.Payload))
	} else {
		raceArrived()
		c.Copy(dst)
		raceTouched()
	}
	if err := c.Check(); err != nil {
		d.corruptLocked(src.String(), err)
		return true
	}
	d.ctr.RxPlaced++
	d.rxPlaced = true
	if p.BTH.Opcode.IsResponse() {
		qp.handleResponse(p)
	} else {
		qp.handleRequest(p)
	}
	d.rxPlaced = false
	return true
}

// writePlace returns where recvWrite puts the payload of p, a WRITE
// middle or last (without immediate), if handleRequest will accept it:
// the expected PSN in a state that receives, a WRITE in progress, and
// a length that fits the MTU and the DMA length. It changes nothing.
func (qp *QP) writePlace(p *roce.Packet) ([]byte, bool) {
	r := &qp.resp
	switch qp.state {
	case QPSRTR, QPSRTS, QPSSQD, QPSSQE:
	default:
		return nil, false
	}
	op := p.BTH.Opcode
	if p.BTH.PSN != r.epsn || !r.inWrite || r.inSend || op.HasImm() {
		return nil, false
	}
	n := uint64(len(p.Payload))
	if op.IsMiddle() && n != uint64(qp.mtu) || r.wrOff+n > uint64(len(r.wrBuf)) ||
		op.IsLast() && r.wrOff+n != uint64(len(r.wrBuf)) {
		return nil, false
	}
	return r.wrBuf[r.wrOff : r.wrOff+n], true
}

// readPlace returns the READ and the offset in its buffer where
// handleReadResponse puts the payload of p, a READ response middle, if
// it will accept it: the expected PSN, a middle response of the READ at
// the head of the send queue, a full MTU inside the READ's length. It
// changes nothing.
func (qp *QP) readPlace(p *roce.Packet) (*sendWQE, uint64, bool) {
	r := &qp.req
	switch qp.state {
	case QPSRTS, QPSSQD, QPSSQE:
	default:
		return nil, 0, false
	}
	psn := p.BTH.PSN
	if psn != r.comp || roce.PSNDiff(psn, r.maxPSN) >= 0 || r.head == r.tail {
		return nil, 0, false
	}
	w := r.at(r.head)
	if !w.started || !w.wr.Opcode.isRead() {
		return nil, 0, false
	}
	idx := roce.PSNDiff(psn, w.psn)
	if idx <= 0 || idx >= int32(w.npkts)-1 {
		return nil, 0, false
	}
	mtu := uint64(qp.mtu)
	off := uint64(idx) * mtu
	if n := uint64(len(p.Payload)); n != mtu || off+n > w.length {
		return nil, 0, false
	}
	return w, off, true
}

// scatterChecked is scatter through k: it copies the next n bytes of
// k's packet to segs from position pos on.
func scatterChecked(k *roce.CopyCheck, segs [][]byte, pos uint64, n int) {
	for _, s := range segs {
		if n == 0 {
			return
		}
		if pos >= uint64(len(s)) {
			pos -= uint64(len(s))
			continue
		}
		m := min(n, len(s)-int(pos))
		k.Copy(s[pos : pos+uint64(m)])
		n -= m
		pos = 0
	}
}
