package verbs

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/roce"
)

// Sending payloads by reference: a packet whose payload lies in memory
// that stays untouched until the batch is flushed (an MR's bytes, inline
// data of a posted WR) does not have its payload copied into the batch.
// The batch buffer gets the packet's headers and its pad and ICRC
// (computed over the payload where it lies), and the message goes out
// with an iovec per piece: headers, payload, trailer, headers, ... The
// kernel copies the payload once, straight from the MR, and segments the
// whole (UDP GSO) as if it were contiguous.
//
// The engine mutex is held from emit to flush, so neither the memory
// (Dereg, destroy) nor the WR (completion, reuse of its slot) can change
// hands in between: transmit and PostSend flush before they return, and
// nothing else emits requests or READ responses.

// txRefMin is the smallest payload sent by reference: below it, a copy
// costs less than the iovecs.
const txRefMin = 1024

// txChunk is how many bytes the batch gathers before it is sent even if
// it has room: a long transfer goes out in pieces that the peer starts
// receiving while the rest is built, instead of in one burst at the end.
// A piece ends where a GSO datagram does (see emitPacket), never cutting
// one short: at a 4096-byte MTU a datagram holds 15 packets, and a piece
// boundary inside one sends its head as a datagram of its own, which
// costs the kernel a socket buffer and a pass through the stack like a
// full one. 512 KiB (two pieces per MiB) takes less CPU per byte than
// 128 KiB did and keeps a MiB in flight in two steps, not one burst.
const txChunk = 512 << 10

// txRef is one payload of message msg sent by reference: it follows the
// bytes of the message's buffer up to offset at.
type txRef struct {
	msg  int
	at   int
	data []byte
}

// maxIovecs bounds the iovecs of one batch: a header-and-trailer piece
// around each referenced payload, one more at the end.
const maxIovecs = batchLen * (2*gsoMaxSegs + 1)

func (t *txBatch) initRefs() {
	t.refs = make([]txRef, 0, batchLen*gsoMaxSegs)
	t.iovs = make([]unix.Iovec, 0, maxIovecs)
}

// appendIovecs appends the iovecs of message i, whose references start at
// refs[r], to iv and returns it and the index of the next message's first
// reference. iv never outgrows its capacity (maxIovecs), so the iovecs
// of earlier messages stay where their headers point.
func (t *txBatch) appendIovecs(iv []unix.Iovec, i, r int) ([]unix.Iovec, int) {
	b, pos := t.bufs[i], 0
	for ; r < len(t.refs) && t.refs[r].msg == i; r++ {
		ref := &t.refs[r]
		if ref.at > pos {
			iv = append(iv, iovecOf(b[pos:ref.at]))
			pos = ref.at
		}
		iv = append(iv, iovecOf(ref.data))
	}
	if pos < len(b) {
		iv = append(iv, iovecOf(b[pos:]))
	}
	return iv, r
}

// dropRefs forgets the references of a sent batch, so that it keeps no
// memory reachable.
func (t *txBatch) dropRefs() {
	clear(t.refs)
	t.refs = t.refs[:0]
}

// message returns the bytes of message i as they go on the wire (for
// tests: it allocates).
func (t *txBatch) message(i int) []byte {
	var out []byte
	b, pos := t.bufs[i], 0
	for _, ref := range t.refs {
		if ref.msg != i {
			continue
		}
		out = append(append(out, b[pos:ref.at]...), ref.data...)
		pos = ref.at
	}
	return append(out, b[pos:]...)
}

// emit appends a packet for dst to the transmit batch, its payload
// copied.
func (d *Device) emit(p *roce.Packet, dst netip.AddrPort) { d.emitPacket(p, dst, false) }

// emitRef is emit for a packet whose payload stays untouched until the
// batch is flushed: a large one is sent from where it lies.
func (d *Device) emitRef(p *roce.Packet, dst netip.AddrPort) { d.emitPacket(p, dst, true) }

func (d *Device) emitPacket(p *roce.Packet, dst netip.AddrPort, stable bool) {
	t := &d.tx
	n := p.WireLen()
	if t.bytes >= txChunk && !t.joins(dst, p.BTH.DestQP, n) {
		// A full piece, and this packet starts a new datagram.
		t.flush(d.sock.fd.Int(), &d.ctr)
	}
	i, ok := t.slot(dst, p.BTH.DestQP, n)
	if !ok {
		t.flush(d.sock.fd.Int(), &d.ctr)
		i, _ = t.slot(dst, p.BTH.DestQP, n)
	}
	// In a GSO message the kernel gives the k-th segment IP ID k, which
	// the ICRC covers (rxe checks it).
	id := uint16(t.nseg[i] - 1)
	if stable && len(p.Payload) >= txRefMin {
		b := roce.AppendHeader(t.bufs[i], p)
		at := len(b)
		t.bufs[i] = d.txICRC.AppendTrailerIPID(b, b[at-p.HeaderLen():], p.Payload, d.local, dst, id)
		t.refs = append(t.refs, txRef{msg: i, at: at, data: p.Payload})
	} else {
		t.bufs[i] = d.txICRC.AppendIPID(t.bufs[i], p, d.local, dst, id)
	}
	if t.bytes >= txChunk && !t.joins(dst, p.BTH.DestQP, t.seg[i]) {
		// A full piece whose last datagram takes no more packets.
		t.flush(d.sock.fd.Int(), &d.ctr)
	}
}
