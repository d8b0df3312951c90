package shm

import (
	"sync/atomic"

	"github.com/ucgo/ucgo/internal/release"
)

// prefetchAhead is how many rounds ahead of the cell it wrote an AMBcopy
// prefetches a cell's first line for writing (ring.prefetch).
const prefetchAhead = 4

// prefetch asks for the first line of the cell of round t+prefetchAhead
// in the state for writing.
//
// A send's claim is a locked instruction, which waits until the
// sender's earlier stores are visible, and the store that published the
// previous message went to a line that the receiver read: in a stream
// of sends without the prefetch, every send waited for that line to come
// from the receiver's core, one round trip between the cores per
// message. Asked for some rounds ahead, the line is this core's by the
// time the sender writes the cell, while the receiver, which reads only
// its head cell, does not take it back first.
func (r *ring) prefetch(t uint64) {
	off := cellsOff(r.cells) + int((t+prefetchAhead)&r.mask)*cellSize
	prefetchW(&r.seg[off])
}

// prefetchStreaming prefetches, after AMShort published round t, the
// cell of a later round (ring.prefetch), when this send follows another
// on the endpoint with no cell handed back by our own iface's Progress
// in between (a stream of sends), and only a cell whose previous round
// the consumer has handed back (ring.handedBack). A ping-pong, whose
// every send follows a receive, gains nothing from the prefetch and paid
// 5-10 ns per message for it, the receiver's copy of the line taken away
// while it waits for the next message.
//
// rxMark is a hint: our receive ring's freed counter as a send last saw
// it, stored without a locked instruction (release.Store; an XCHG would
// wait for the cell just published). Sends on one endpoint from several
// goroutines may overwrite each other's mark, which only decides whether
// one prefetch is issued.
func (ep *Endpoint) prefetchStreaming(t uint64) {
	if ep.streaming() && ep.tx.handedBack(t+prefetchAhead) {
		ep.tx.prefetch(t)
	}
}

// handedBack reports whether the cell of round t is free as far as the
// producer's bound (limit) knows: the consumer has handed back its
// previous round. The prefetch takes no cell whose message the consumer
// may still have to read: with the ring full, that would take the line
// from the consumer before its read, and it would have to take it back.
func (r *ring) handedBack(t uint64) bool {
	return t < atomic.LoadUint64(&r.limit)
}

// streaming reports whether our iface handed back no cell since the
// send before this one on the endpoint, and marks this send.
func (ep *Endpoint) streaming() bool {
	f := atomic.LoadUint64(ep.it.rx.freed)
	if f != atomic.LoadUint64(&ep.rxMark) {
		release.Store(&ep.rxMark, f)
		return false
	}
	return true
}
