package shm

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
// its head cell, does not take it back first. AMBcopy prefetches after
// it published its message, off that message's path; AMShort does not
// (a ping-pong of short messages gains nothing from it and paid 5-10 ns
// per message for the prefetch).
func (r *ring) prefetch(t uint64) {
	off := cellsOff(r.cells) + int((t+prefetchAhead)&r.mask)*cellSize
	prefetchW(&r.seg[off])
}
