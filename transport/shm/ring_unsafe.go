package shm

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/release"
)

func u64at(b []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&b[off])) }
func u32at(b []byte, off int) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }

// ring is a view of a segment's receive FIFO: a bounded queue of cells,
// an array of claim words (one per cell) and counters in the header.
type ring struct {
	seg   []byte
	cells int
	mask  uint64
	tail  *uint64
	freed *uint64
	futex *uint32
	wait  *uint32
	// limit is this producer's bound on the rounds it may claim: the
	// consumer's freed counter, as last read, plus cells. Read and
	// written atomically (an endpoint may send from several goroutines);
	// a stale value is only smaller, since freed never goes back.
	limit uint64
}

func newRing(seg []byte, cells int) ring {
	r := ring{seg: seg, cells: cells, mask: uint64(cells - 1)}
	r.tail = u64at(seg, hdrTail)
	r.freed = u64at(seg, hdrFreed)
	r.futex = u32at(seg, hdrFutex)
	r.wait = u32at(seg, hdrWaiting)
	return r
}

func (r *ring) claim(i uint64) *uint64 { return u64at(r.seg, hdrSize+int(i&r.mask)*8) }

func (r *ring) cell(i uint64) []byte {
	off := cellsOff(r.cells) + int(i&r.mask)*cellSize
	return r.seg[off : off+cellSize : off+cellSize]
}

func (r *ring) buf(i uint64) []byte {
	off := cellsOff(r.cells) + r.cells*cellSize + int(i&r.mask)*bufStride
	return r.seg[off : off+bufSize : off+bufSize]
}

// initCells makes each cell free for round 0: its claim word holds a
// claim of the round before (by no process).
func (r *ring) initCells() {
	for i := 0; i < r.cells; i++ {
		atomic.StoreUint64(r.claim(uint64(i)), claimTag(uint64(i)-uint64(r.cells)))
	}
}

// Round t (the t-th message of the ring) goes into cell t mod cells.
// Two words say where it is:
//
//   - the cell's claim word, in an array apart from the cells, holds
//     claimed(t, pid) from the moment a producer reserves the cell for
//     round t until the producer of round t+cells reserves it;
//   - the cell's sequence word (its first word) holds t+1 once the
//     message of round t is published.
//
// A cell is free for round t once its claim word holds a claim of round
// t-cells and the consumer has handed that round back: the consumer
// stores how many rounds it is done with in the header's freed counter
// (its own cache line, which only the consumer writes), and a producer
// reads it only when its own bound (limit) says the ring may be full.
//
// So the consumer never writes to a cell or a claim word, and producers
// write claim words that the consumer does not read on its fast path: a
// producer's claim (its one locked instruction) finds the claim word's
// cache line in its own cache, as long as no other producer took it,
// and a consumer's store into a line that the producer wrote (a cell
// handed back) would wait for the producer's copy to be invalidated, a
// round trip between the cores per message. The cell's line moves
// between the cores twice per message, as in any shared-memory FIFO:
// the producer's stores, and the consumer's read.
//
// Claiming the cell before moving the tail, and helping the tail past a
// claimed cell, means the tail never passes a cell whose writer is
// unknown: a writer killed while writing leaves its pid in the claim
// word, and the receiver can skip the cell once that process is gone.
const claimBit = 1 << 63

func claimTag(t uint64) uint64 { return claimBit | (t&0x7fffffff)<<32 }

// claimOwner returns the pid that claimed a cell for round t, given its
// claim word, or 0.
func claimOwner(claim, t uint64) int {
	if claim&^0xffffffff != claimTag(t) {
		return 0
	}
	return int(uint32(claim))
}

// reserve claims the next free cell for pid me; false if the ring is full.
//
// The claim (a compare-and-swap of the cell's claim word from the
// previous round's claim to this round's) is what reserves the cell; the
// tail is only where senders start looking. The claimer moves it past
// its cell with a plain store, so a send costs one locked instruction. A
// claimer delayed between its claim and that store may set the tail back
// (never past a claimed cell, and by less than a round, since its own
// cell, unpublished, stops the consumer); senders that find the tail's
// cell already claimed in this round move the tail on with a
// compare-and-swap, as they help the tail past a cell claimed by a sender
// that has not moved it yet.
//
// A producer that finds the tail at its limit reads the consumer's freed
// counter, and reports the ring full without touching the cell if the
// consumer has not handed it back.
func (r *ring) reserve(me uint32) (uint64, bool) {
	for {
		t := atomic.LoadUint64(r.tail)
		if t >= atomic.LoadUint64(&r.limit) && !r.refresh(t) {
			return 0, false // the consumer has not handed back round t-cells
		}
		p := r.claim(t)
		c := atomic.LoadUint64(p)
		switch c &^ 0xffffffff {
		case claimTag(t - uint64(r.cells)):
			if atomic.CompareAndSwapUint64(p, c, claimTag(t)|uint64(me)) {
				release.Store(r.tail, t+1)
				return t, true
			}
		case claimTag(t):
			// claimed in this round by a sender that has not moved the
			// tail yet, or the tail was set back: help it on
			atomic.CompareAndSwapUint64(r.tail, t, t+1)
		}
		// else another sender claimed it and moved the tail since our load
	}
}

// refresh reads the consumer's freed counter into limit and reports
// whether round t is below it.
func (r *ring) refresh(t uint64) bool {
	lim := atomic.LoadUint64(r.freed) + uint64(r.cells)
	atomic.StoreUint64(&r.limit, lim)
	return t < lim
}

// hasRoom reports whether a reserve would succeed now.
func (r *ring) hasRoom() bool {
	t := atomic.LoadUint64(r.tail)
	return t < atomic.LoadUint64(&r.limit) || r.refresh(t)
}

// stuckOwner returns the pid that claimed cell head but has not published
// it, or 0.
func (r *ring) stuckOwner(head uint64) int {
	if r.ready(head) {
		return 0
	}
	return claimOwner(atomic.LoadUint64(r.claim(head)), head)
}

// publish makes cell t visible to the consumer and wakes it if it sleeps.
//
// The publishing store is a plain store with release order (release.Store):
// the cell's contents are visible before it. The check for a sleeping
// consumer needs no barrier after that store: the claim's compare-and-swap
// in reserve is one, and it pairs with the consumer's announcement in Arm
// (a full barrier too) as in Dekker's algorithm. Either the consumer
// announced itself before our claim, and the load of the waiting word
// below sees it, or it announced itself after, and its check of the head
// cell's claim that follows sees it; a consumer that finds the head cell
// claimed does not sleep (pending).
func (r *ring) publish(t uint64) {
	release.Store(u64at(r.cell(t), 0), t+1)
	if atomic.LoadUint32(r.wait) != 0 {
		r.wake()
	}
}

func (r *ring) wake() {
	atomic.AddUint32(r.futex, 1)
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(r.futex)), futexWake, 1<<30, 0, 0, 0)
}

// pending reports whether the cell at head is claimed or published: a
// message is on its way, so the consumer must not sleep.
func (r *ring) pending(head uint64) bool {
	return r.ready(head) || atomic.LoadUint64(r.claim(head))&^0xffffffff == claimTag(head)
}

// ready reports whether the cell at head is published.
func (r *ring) ready(head uint64) bool {
	return atomic.LoadUint64(u64at(r.cell(head), 0)) == head+1
}

// handBack tells the producers that the consumer is done with every cell
// of the rounds before n. Only the consumer writes the counter, so a
// release store (no full barrier) suffices: the consumer's reads of the
// cells come before it.
func (r *ring) handBack(n uint64) {
	release.Store(r.freed, n)
}

// sleep blocks on the futex while its value is val, at most d.
func (r *ring) sleep(val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(r.futex)), futexWait, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// atomicOp applies op on the 4- or 8-byte word at b[0:].
func atomicOp(b []byte, size int, op int, value, compare uint64) uint64 {
	if size == 4 {
		p := u32at(b, 0)
		v, c := uint32(value), uint32(compare)
		switch op {
		case opAdd:
			return uint64(atomic.AddUint32(p, v) - v)
		case opAnd:
			return uint64(atomic.AndUint32(p, v))
		case opOr:
			return uint64(atomic.OrUint32(p, v))
		case opSwap:
			return uint64(atomic.SwapUint32(p, v))
		case opCSwap:
			for {
				o := atomic.LoadUint32(p)
				if o != c || atomic.CompareAndSwapUint32(p, o, v) {
					return uint64(o)
				}
			}
		default: // xor
			for {
				o := atomic.LoadUint32(p)
				if atomic.CompareAndSwapUint32(p, o, o^v) {
					return uint64(o)
				}
			}
		}
	}
	p := u64at(b, 0)
	switch op {
	case opAdd:
		return atomic.AddUint64(p, value) - value
	case opAnd:
		return atomic.AndUint64(p, value)
	case opOr:
		return atomic.OrUint64(p, value)
	case opSwap:
		return atomic.SwapUint64(p, value)
	case opCSwap:
		for {
			o := atomic.LoadUint64(p)
			if o != compare || atomic.CompareAndSwapUint64(p, o, value) {
				return o
			}
		}
	default:
		for {
			o := atomic.LoadUint64(p)
			if atomic.CompareAndSwapUint64(p, o, o^value) {
				return o
			}
		}
	}
}

func sliceAddr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

func iovecs(bufs [][]byte) []unix.Iovec {
	v := make([]unix.Iovec, 0, len(bufs))
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		var iv unix.Iovec
		iv.Base = &b[0]
		iv.SetLen(len(b))
		v = append(v, iv)
	}
	return v
}

const (
	futexWait = 0 // FUTEX_WAIT, not private: the word is in a shared mapping
	futexWake = 1
)

func loadU32(b []byte, off int) uint32     { return atomic.LoadUint32(u32at(b, off)) }
func storeU32(b []byte, off int, v uint32) { atomic.StoreUint32(u32at(b, off), v) }
