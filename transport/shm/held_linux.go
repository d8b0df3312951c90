package shm

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// A FIFO held by a live writer.
//
// A writer that claimed the head cell and has not published it for
// stuckAfter, and is still alive (stopped by SIGSTOP or a debugger,
// descheduled, paging), holds the head: its cell can be neither skipped
// (it may resume and publish it: the message would be lost) nor reused
// (it would then write over another message). The receiver keeps the
// head there and delivers, around it, the published cells behind it,
// in ring order, of every writer that has no unpublished cell before
// them; a writer with one waits for it. So each writer's messages keep
// their order (an endpoint's messages come from one process), messages
// of different writers may overtake each other, as they may on any
// transport, and healthy peers are still heard while one process is
// stopped. The cells delivered around the head are handed back only once
// the head passes them, so while the hold lasts the writers share the
// rest of one lap of the ring (its cells less one): after that every
// send finds the FIFO full. When the holder publishes, its cell is
// delivered and the head moves on past the cells already delivered;
// when it dies, checkStuck skips its cell.
//
// HeldFIFO reports the hold: the holder's pid and since when, whether
// the lap is used up, how many holds the iface saw and how many messages
// went around them.

// FIFOHold describes the receive FIFO's hold by a live writer.
type FIFOHold struct {
	// Writer is the pid of the live process that holds the head cell
	// (claimed, unpublished for 100 ms or more), or 0 if none does.
	Writer int
	// Since is when the receiver first found that cell claimed and
	// unpublished (zero if no writer holds the head).
	Since time.Time
	// Full says that the writers have claimed every cell of the lap
	// that the held cell allows, so sends find the FIFO full until the
	// holder publishes or dies.
	Full bool
	// Holds counts the holds the iface has seen; Around counts the
	// messages it delivered around a held cell.
	Holds, Around uint64
}

// HeldFIFO reports whether a live writer holds the receive FIFO's head
// cell. Call it from the goroutine that calls Progress.
func (it *Iface) HeldFIFO() FIFOHold {
	h := FIFOHold{Writer: it.hold.pid, Holds: it.hold.holds, Around: it.hold.around}
	if h.Writer != 0 {
		h.Since = it.hold.since
		// no round of the next lap can be claimed while the head is
		// held; the tail, which a late claimer may set back by less
		// than a lap, reads as it is now
		h.Full = atomic.LoadUint64(it.rx.tail) >= it.head+uint64(it.rx.cells)
	}
	return h
}

// fifoHold is the receiver's state of a held head (Iface.hold).
type fifoHold struct {
	pid   int    // the writer holding the head cell; 0: none
	head  uint64 // the round it holds
	since time.Time
	// done marks the rounds ahead of the head delivered around it (bit
	// r&mask of round r, a lap at most ahead); ahead counts them.
	done  []uint64
	ahead int
	// blocked collects, during a scan, the writers with an unpublished
	// cell at or before the scanned one.
	blocked       []int
	holds, around uint64
}

// active reports whether Progress must take the hold into account: a
// writer holds the head, or rounds ahead of it were delivered.
func (h *fifoHold) active() bool { return h.pid != 0 || h.ahead != 0 }

func (h *fifoHold) isDone(r uint64) bool { return h.done[(r>>6)%uint64(len(h.done))]&(1<<(r&63)) != 0 }

func (h *fifoHold) setDone(r uint64, on bool) {
	w, b := &h.done[(r>>6)%uint64(len(h.done))], uint64(1)<<(r&63)
	if on {
		*w |= b
		h.ahead++
	} else {
		*w &^= b
		h.ahead--
	}
}

// holdBy records that the live process pid holds the head cell (from
// checkStuck, once the cell stayed claimed for stuckAfter).
func (it *Iface) holdBy(pid int) {
	h := &it.hold
	if h.pid == pid && h.head == it.head {
		return
	}
	if h.done == nil {
		h.done = make([]uint64, (it.rx.cells+63)/64)
	}
	h.pid, h.head, h.since = pid, it.head, it.stuckSince
	h.holds++
}

// deliverAround is Progress's delivery while the hold is active: in
// order from the head, stepping over the rounds delivered around it,
// then, if a writer still holds the head, around it.
func (it *Iface) deliverAround() int {
	it.releaseDelivered()
	h := &it.hold
	n := 0
	for n < deliverMax {
		if h.ahead != 0 && h.isDone(it.head) {
			h.setDone(it.head, false)
			it.head++
			continue
		}
		if !it.rx.ready(it.head) {
			break
		}
		it.deliverCell(it.head)
		it.head++
		n++
	}
	if h.pid != 0 && it.head != h.head {
		h.pid = 0 // the holder published its cell, or died and was skipped
		it.stuckSince = time.Time{}
	}
	if h.pid != 0 && n < deliverMax {
		n += it.deliverBehind(deliverMax - n)
	}
	if n > 0 {
		it.notify.CompletedN(n, uct.CompletionInfo{Queue: uct.NotifyRecv})
	}
	return n
}

// deliverBehind delivers up to limit published cells behind the held head
// whose writers have no unpublished cell before them, and marks them
// done. The claims of the rounds in the lap ahead of the head do not
// change while it is held (no round of the next lap can be claimed), and
// claimed rounds are a prefix of them, so the scan ends at the first
// unclaimed one.
func (it *Iface) deliverBehind(limit int) int {
	h := &it.hold
	h.blocked = append(h.blocked[:0], h.pid)
	n := 0
	end := it.head + uint64(it.rx.cells)
	for r := it.head + 1; r < end && n < limit; r++ {
		if h.isDone(r) {
			continue
		}
		w := claimOwner(atomic.LoadUint64(it.rx.claim(r)), r)
		if w == 0 {
			break
		}
		if slices.Contains(h.blocked, w) {
			continue
		}
		if !it.rx.ready(r) {
			h.blocked = append(h.blocked, w) // its later cells wait too
			continue
		}
		it.deliverCell(r)
		h.setDone(r, true)
		h.around++
		n++
	}
	return n
}
