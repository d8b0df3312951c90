package shm

import (
	"fmt"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// The FIFO in use: Progress drains this iface's receive ring; send and
// the AM operations claim and publish cells in the peer's ring.

// Progress delivers received AMs and dispatches pending requests. An
// idle call (nothing received, nothing pending) reads a few words of the
// iface and the head cell's sequence; the rest is out of line.
func (it *Iface) Progress() int {
	if it.closed.Load() || it.disabled.Load() != nil {
		return 0 // a disabled device receives nothing
	}
	n := 0
	if it.freed != it.head || it.rx.ready(it.head) {
		n = it.deliver()
	}
	if n == 0 && it.hold.pid != 0 {
		n = it.deliverAround() // a live writer holds the head
	}
	if n == 0 {
		if it.idle++; it.idle&1023 == 0 {
			it.checkStuck()
		}
	}
	if it.pendingN.Load() == 0 {
		return n
	}
	return n + it.dispatchPendingAll()
}

// deliverMax is the most received AMs one Progress delivers, UCX's mm
// figure. A caller that posts receives between Progress calls (ucp's
// tag stream) finds more of them posted before their message arrives,
// and the cells are handed back in batches of this size.
const deliverMax = 16

// deliver runs the handlers of up to deliverMax received AMs.
func (it *Iface) deliver() int {
	if it.hold.active() {
		return it.deliverAround()
	}
	it.releaseDelivered()
	n := 0
	for n < deliverMax && it.rx.ready(it.head) {
		it.deliverCell(it.head)
		it.head++
		n++
	}
	if n > 0 {
		it.notify.CompletedN(n, uct.CompletionInfo{Queue: uct.NotifyRecv})
	}
	return n
}

// deliverCell runs the handler of the published cell of round r, or
// drops it for a bad length (deliver, and deliverAround for the cells
// behind a held head).
func (it *Iface) deliverCell(r uint64) {
	c := it.rx.cell(r)
	ln := int(*u32at(c, 8))
	id := c[12] & uct.MaxAMID
	var data []byte
	switch {
	case ln <= inlineMax:
		data = c[cellHdr : cellHdr+ln]
	case ln <= bufSize:
		data = it.rx.buf(r)[:ln]
	default:
		it.badLength(ln, uct.AMSource(*u64at(c, cellSrc)))
		return
	}
	if e := it.handler[id]; e.hs != nil {
		e.hs(e.arg, data, 0, uct.AMSource(*u64at(c, cellSrc)))
	} else if e.h != nil {
		e.h(e.arg, data, 0)
	}
}

// dispatchPendingAll dispatches the pending requests of every endpoint.
func (it *Iface) dispatchPendingAll() int {
	it.mu.Lock()
	var pend []*Endpoint
	for ep := range it.eps {
		if len(ep.pending) > 0 {
			pend = append(pend, ep)
		}
	}
	it.mu.Unlock()
	n := 0
	for _, ep := range pend {
		n += ep.dispatchPending()
	}
	return n
}

// releaseDelivered hands the cells that Progress delivered back to the
// producers: one store of the ring's freed counter (ring.handBack).
// Progress hands back, at its start, the cells the call before it
// delivered: once per call, not once per cell, so that in a stream the
// counter's line, which a producer that finds the ring full reads, moves
// between the cores once per up to deliverMax messages; and not right
// after the handlers, so that the store does not delay what they
// started, such as the answer of a ping-pong, which the caller sends
// after Progress returns (its claim, a locked instruction, waits for the
// store). A receiver that stops calling Progress holds at most
// deliverMax delivered cells, and one that sleeps after an empty
// Progress holds none.
func (it *Iface) releaseDelivered() {
	if it.freed != it.head {
		it.freed = it.head
		it.rx.handBack(it.freed)
	}
}

// stuckAfter is how long a claimed, unpublished head cell waits before the
// receiver asks whether its writer is still alive.
const stuckAfter = 100 * time.Millisecond

// deadWriterSeen, when tests set it, runs in checkStuck once the process
// that claimed the head cell is known gone, before the receiver looks at
// the cell again. It is nil otherwise.
var deadWriterSeen func(it *Iface, head uint64)

// checkStuck skips the head cell if the process that claimed it died
// before publishing it, and records a hold if that process lives (slow
// path, every 1024 empty polls). A writer can
// publish the cell and exit between the stuckOwner read and the liveness
// answer; once the process is gone the cell no longer changes, so a second
// look at its sequence tells a lost message from a published one, which
// Progress then delivers.
func (it *Iface) checkStuck() {
	pid := it.rx.stuckOwner(it.head)
	if pid == 0 {
		return
	}
	now := time.Now()
	if it.stuckSince.IsZero() || it.stuckHead != it.head {
		it.stuckHead, it.stuckSince = it.head, now
		return
	}
	if now.Sub(it.stuckSince) < stuckAfter {
		return
	}
	if processAlive(pid) {
		it.holdBy(pid) // deliver around its cell (held_linux.go)
		return
	}
	if deadWriterSeen != nil {
		deadWriterSeen(it, it.head)
	}
	if it.rx.ready(it.head) {
		it.stuckSince = time.Time{}
		return // published before its writer exited: deliver it
	}
	it.head++
	it.releaseDelivered()
	it.stuckSince = time.Time{}
}

func (ep *Endpoint) send(op string, id uint8, parts ...[]byte) (int, error) {
	if err := ep.check(op); err != nil {
		return 0, err
	}
	if id > uct.MaxAMID {
		return 0, ep.opErr(op, uct.ErrInvalidParam, nil)
	}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n > bufSize {
		return 0, ep.opErr(op, uct.ErrInvalidParam, fmt.Errorf("%d bytes > %d", n, bufSize))
	}
	t, ok := ep.tx.reserve(ep.it.me)
	if !ok {
		return 0, ep.noResource(op)
	}
	c := ep.tx.cell(t)
	var dst []byte
	if n <= inlineMax {
		dst = c[cellHdr:]
	} else {
		dst = ep.tx.buf(t)
	}
	off := 0
	for _, p := range parts {
		off += copy(dst[off:], p)
	}
	ep.sealCell(c, n, id)
	ep.tx.publish(t)
	return n, nil
}

// AMShort sends header and payload through the FIFO.
func (ep *Endpoint) AMShort(id uint8, header uint64, payload []byte) error {
	if len(payload) > inlineMax-8 {
		return ep.opErr("am_short", uct.ErrInvalidParam, nil)
	}
	if ep.troubled() {
		if err := ep.check("am_short"); err != nil {
			return err
		}
	}
	if id > uct.MaxAMID {
		return ep.opErr("am_short", uct.ErrInvalidParam, nil)
	}
	t, ok := ep.tx.reserve(ep.it.me)
	if !ok {
		return ep.noResource("am_short")
	}
	c := ep.tx.cell(t)
	*u64at(c, cellHdr) = header
	copy(c[cellHdr+8:], payload)
	ep.sealCell(c, 8+len(payload), id)
	ep.tx.publish(t)
	ep.prefetchStreaming(t)
	return nil
}

// AMZcopy sends header and iov; the data is copied before it returns, so
// it completes at once (nil) and comp is not invoked.
func (ep *Endpoint) AMZcopy(id uint8, header []byte, iov [][]byte, comp *uct.Completion) error {
	if len(header) > 64 || len(iov) > 16 {
		return ep.opErr("am_zcopy", uct.ErrInvalidParam, nil)
	}
	parts := make([][]byte, 0, len(iov)+1)
	parts = append(parts, header)
	parts = append(parts, iov...)
	_, err := ep.send("am_zcopy", id, parts...)
	return err
}
