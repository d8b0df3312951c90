package shm

import (
	"fmt"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// badCellEvery bounds the corrupt-message events of an iface: a peer that
// keeps writing bad cells posts one event a second, with the count.
const badCellEvery = time.Second

// badLength drops a published cell whose length word exceeds the bcopy
// buffer. Only a faulty or hostile writer produces one: the send paths
// refuse longer messages. The message is not delivered, the cell is
// handed back like a delivered one, and EventCorruptPacket (wrapping
// uct.ErrDataCorrupt) reports the drops, at most once per badCellEvery.
func (it *Iface) badLength(ln int, src uct.AMSource) {
	it.badCells++
	now := time.Now()
	if !it.badAt.IsZero() && now.Sub(it.badAt) < badCellEvery {
		return
	}
	n := it.badCells - it.badSeen
	it.badAt, it.badSeen = now, it.badCells
	err := fmt.Errorf("shm: %d messages dropped for a bad length, the last %d bytes > %d from source %#x: %w",
		n, ln, bufSize, uint64(src), uct.ErrDataCorrupt)
	it.events.Post(&uct.Event{Type: uct.EventCorruptPacket, Object: "receive FIFO", Owner: it, Err: err})
}

// BadCells is the number of received messages dropped for a bad length.
// Call it from the goroutine that calls Progress.
func (it *Iface) BadCells() uint64 { return it.badCells }
