package failover

import (
	"errors"
	"fmt"
)

// ErrGap: a message arrived further ahead of the next one to deliver than
// the window holds; the receiver drops it and the sender's replay brings
// it again.
var ErrGap = errors.New("failover: sequence gap wider than the reorder window")

// ErrSeqZero: sequence numbers start at 1; a message numbered 0 is not
// from a SendLog.
var ErrSeqZero = errors.New("failover: sequence number 0")

// Verdict is what RecvWindow.Accept did with a message.
type Verdict uint8

const (
	// Delivered: the message was next in order and was delivered (with
	// any held ones that now follow it).
	Delivered Verdict = iota
	// Held: the message is ahead of the next one; it is kept until the
	// gap fills.
	Held
	// Duplicate: the message was delivered before (or is already held);
	// it is dropped.
	Duplicate
)

var verdictNames = [...]string{Delivered: "delivered", Held: "held", Duplicate: "duplicate"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", v)
}

// RecvWindow is the receiving side of an endpoint's sequence numbers: it
// delivers every number once and in order, drops duplicates (a message
// replayed after a failover that had arrived over the old lane), holds
// messages that overtook a missing one (two lanes at once) up to its
// size, and says what to acknowledge.
type RecvWindow[T any] struct {
	delivered uint64 // every message up to here was delivered
	acked     uint64 // the last cumulative acknowledgement taken
	held      []T    // slot seq%len(held) for seq in (delivered, delivered+len]
	present   []bool
	nheld     int
	dups      uint64
}

// NewRecvWindow makes a window that holds up to size messages ahead of a
// missing one (0: none; such a message is ErrGap).
func NewRecvWindow[T any](size int) *RecvWindow[T] {
	size = max(0, size)
	return &RecvWindow[T]{held: make([]T, size), present: make([]bool, size)}
}

// Delivered is the highest sequence number delivered in order: what a
// resync answers and a cumulative acknowledgement carries.
func (w *RecvWindow[T]) Delivered() uint64 { return w.delivered }

// Held is how many messages wait for a gap to fill.
func (w *RecvWindow[T]) Held() int { return w.nheld }

// Duplicates is how many messages were dropped as duplicates.
func (w *RecvWindow[T]) Duplicates() uint64 { return w.dups }

// Accept takes message seq with payload v, calling deliver for it and
// for every held message that follows it, in order.
func (w *RecvWindow[T]) Accept(seq uint64, v T, deliver func(seq uint64, v T)) (Verdict, error) {
	switch {
	case seq == 0:
		return Duplicate, ErrSeqZero
	case seq <= w.delivered:
		w.dups++
		return Duplicate, nil
	case seq == w.delivered+1:
		deliver(seq, v)
		w.delivered = seq
		w.drain(deliver)
		return Delivered, nil
	}
	size := uint64(len(w.held))
	if seq-w.delivered > size {
		return Duplicate, fmt.Errorf("%w: message %d, next is %d, window %d", ErrGap, seq, w.delivered+1, size)
	}
	slot := seq % size
	if w.present[slot] {
		w.dups++
		return Duplicate, nil
	}
	w.held[slot], w.present[slot] = v, true
	w.nheld++
	return Held, nil
}

// InOrder is Accept's fast path for a message that is next in order
// while nothing is held: it records seq as delivered and reports true;
// the caller delivers the message itself. Otherwise it changes nothing
// and reports false: the caller passes the message to Accept.
func (w *RecvWindow[T]) InOrder(seq uint64) bool {
	if seq != w.delivered+1 || w.nheld != 0 || seq == 0 {
		return false
	}
	w.delivered = seq
	return true
}

// drain delivers held messages that now follow in order.
func (w *RecvWindow[T]) drain(deliver func(seq uint64, v T)) {
	var zero T
	for w.nheld > 0 {
		next := w.delivered + 1
		slot := next % uint64(len(w.held))
		if !w.present[slot] {
			return
		}
		v := w.held[slot]
		w.held[slot], w.present[slot] = zero, false
		w.nheld--
		deliver(next, v)
		w.delivered = next
	}
}

// Owed is how many delivered messages the peer has not been told of.
func (w *RecvWindow[T]) Owed() uint64 { return w.delivered - w.acked }

// TakeAck returns the cumulative acknowledgement to send, and records it
// as sent; ok is false when nothing new was delivered since the last one.
// ucp piggybacks it on outgoing traffic, or sends it alone when Owed has
// grown or the endpoint has been idle.
func (w *RecvWindow[T]) TakeAck() (cum uint64, ok bool) {
	if w.delivered == w.acked {
		return w.delivered, false
	}
	w.acked = w.delivered
	return w.delivered, true
}

// Drop forgets the held messages (the endpoint failed or was purged) and
// returns how many there were.
func (w *RecvWindow[T]) Drop() int {
	n := w.nheld
	var zero T
	for i := range w.held {
		w.held[i], w.present[i] = zero, false
	}
	w.nheld = 0
	return n
}
