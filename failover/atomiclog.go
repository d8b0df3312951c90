package failover

import (
	"errors"
	"fmt"
)

// ErrOutcomeUnknown completes an atomic operation whose outcome cannot be
// settled after a failover: the target no longer remembers whether it
// applied it. The operation is not retried, since applying it twice
// would be wrong; the caller must find out by other means.
var ErrOutcomeUnknown = errors.New("failover: atomic outcome unknown")

// ErrStaleOp: an atomic operation id at or below one already recorded.
var ErrStaleOp = errors.New("failover: atomic op id not above the last recorded")

// Outcome is what the target knows of an atomic operation.
type Outcome uint8

const (
	// NotApplied: the target never applied it; it may be sent again.
	NotApplied Outcome = iota
	// Applied: the target applied it; its result is remembered.
	Applied
	// Unknown: the target applied operations up to and past it but no
	// longer remembers this one (ErrOutcomeUnknown).
	Unknown
)

var outcomeNames = [...]string{NotApplied: "not applied", Applied: "applied", Unknown: "unknown"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", o)
}

// AtomicLog is the target's memory of the atomic operations one peer
// endpoint applied: the last Size operation ids (the operations'
// sequence numbers, which increase) with the value each fetched. After a
// failover the initiator asks about an atomic whose answer it lost, and
// the log settles it: applied (here is the result), not applied (send it
// again), or unknown.
type AtomicLog struct {
	ids     []uint64
	results []uint64
	head    int // index of the oldest remembered
	n       int
	last    uint64 // highest id recorded
	lost    uint64 // highest id forgotten (evicted)
}

// NewAtomicLog remembers the last size operations (at least 1).
func NewAtomicLog(size int) *AtomicLog {
	size = max(1, size)
	return &AtomicLog{ids: make([]uint64, size), results: make([]uint64, size)}
}

// Record remembers that operation id was applied and fetched result.
func (a *AtomicLog) Record(id, result uint64) error {
	if id <= a.last {
		return fmt.Errorf("%w: %d after %d", ErrStaleOp, id, a.last)
	}
	if a.n == len(a.ids) {
		a.lost = a.ids[a.head]
		a.head = (a.head + 1) % len(a.ids)
		a.n--
	}
	i := (a.head + a.n) % len(a.ids)
	a.ids[i], a.results[i] = id, result
	a.n++
	a.last = id
	return nil
}

// Settle says what became of operation id, given that the target has
// delivered every message of the endpoint up to delivered (its
// RecvWindow): an operation numbered above that never reached it.
func (a *AtomicLog) Settle(id, delivered uint64) (Outcome, uint64) {
	if id > delivered {
		return NotApplied, 0
	}
	// Binary search: the remembered ids increase from head.
	lo, hi := 0, a.n
	for lo < hi {
		m := (lo + hi) / 2
		if a.ids[(a.head+m)%len(a.ids)] < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < a.n {
		if i := (a.head + lo) % len(a.ids); a.ids[i] == id {
			return Applied, a.results[i]
		}
	}
	return Unknown, 0
}
