package shm

import (
	"encoding/binary"

	"github.com/ucgo/ucgo/uct"
)

// AMBcopy sends header and payload as one message.
//
// The common case is written out here rather than through send, whose
// variadic parts cost a loop and a call of memmove per part: an 8-byte
// header (the one am_bw and the ucp protocols send) is one load and
// store, and the payload goes with putCopy, which moves 32 bytes per
// instruction at 129 to 256 bytes. Anything that does not pass the checks
// at once (a failed or disabled endpoint, a bad id or size, a full FIFO)
// takes send, which builds the error. After publishing the message it
// prefetches the cell of a later round for writing (ring.prefetch), in a
// stream or not: gating it as AMShort's (prefetchStreaming) cost am_bw
// 256 B a tenth of its rate.
func (ep *Endpoint) AMBcopy(id uint8, header, payload []byte) (int, error) {
	h, n := len(header), len(header)+len(payload)
	if id > uct.MaxAMID || n > bufSize || ep.troubled() {
		return ep.send("am_bcopy", id, header, payload)
	}
	t, ok := ep.tx.reserve(ep.it.me)
	if !ok {
		return 0, ep.noResource("am_bcopy")
	}
	c := ep.tx.cell(t)
	var dst []byte
	if n <= inlineMax {
		dst = c[cellHdr : cellHdr+n]
	} else {
		dst = ep.tx.buf(t)[:n]
	}
	if h == 8 {
		binary.LittleEndian.PutUint64(dst, binary.LittleEndian.Uint64(header))
	} else {
		copy(dst, header)
	}
	putCopy(dst[h:], payload)
	ep.sealCell(c, n, id)
	ep.tx.publish(t)
	ep.tx.prefetch(t)
	return n, nil
}
