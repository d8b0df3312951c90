package failover

import (
	"errors"
	"fmt"
)

// Errors of the sequence window. Each names a misbehaving caller or peer:
// the endpoint that gets one cannot trust its sequence state.
var (
	// ErrLogFull: the sender has Limit messages unacknowledged; it must
	// wait for an acknowledgement (back-pressure, like uct.ErrNoResource).
	ErrLogFull = errors.New("failover: replay log full")
	// ErrAckAhead: an acknowledgement or a delivered count names a
	// sequence number that was never sent.
	ErrAckAhead = errors.New("failover: acknowledgement beyond the last message sent")
)

// SendLog numbers an endpoint's messages and keeps each one until the
// peer acknowledges it, so that after a lane failure the messages the
// peer has not delivered can be sent again. Sequence numbers start at 1
// and belong to the endpoint, whatever lane carries a message. T is what
// the sender needs to send a message again (ucp keeps its request).
//
// The log is a ring of a power-of-two size (indexed by a mask, not a
// division) that grows by doubling up to its limit; appending and
// acknowledging allocate nothing once it has grown.
type SendLog[T any] struct {
	buf   []T
	head  int    // index of the oldest unacknowledged message
	n     int    // unacknowledged messages
	first uint64 // sequence number of buf[head]
	limit int
}

// NewSendLog makes a log that holds at most limit unacknowledged
// messages (at least 1).
func NewSendLog[T any](limit int) *SendLog[T] {
	return &SendLog[T]{first: 1, limit: max(1, limit)}
}

// Next is the sequence number the next Append returns.
func (l *SendLog[T]) Next() uint64 { return l.first + uint64(l.n) }

// Acked is the highest sequence number acknowledged (0: none).
func (l *SendLog[T]) Acked() uint64 { return l.first - 1 }

// Len is the number of unacknowledged messages.
func (l *SendLog[T]) Len() int { return l.n }

// Limit is the most unacknowledged messages the log holds.
func (l *SendLog[T]) Limit() int { return l.limit }

// Append numbers a message and keeps it until it is acknowledged.
func (l *SendLog[T]) Append(v T) (uint64, error) {
	if l.n == l.limit {
		return 0, fmt.Errorf("%w: %d messages unacknowledged since %d", ErrLogFull, l.n, l.first)
	}
	if l.n == len(l.buf) {
		l.grow()
	}
	seq := l.first + uint64(l.n)
	l.buf[(l.head+l.n)&(len(l.buf)-1)] = v
	l.n++
	return seq, nil
}

func (l *SendLog[T]) grow() {
	size := 16
	for size < 2*len(l.buf) || size < l.n+1 {
		size *= 2
	}
	nb := make([]T, size)
	for i := 0; i < l.n; i++ {
		nb[i] = l.buf[(l.head+i)&(len(l.buf)-1)]
	}
	l.buf, l.head = nb, 0
}

// Ack records a cumulative acknowledgement: the peer has delivered every
// message up to cum. release, when not nil, is called for each message it
// frees, in order. An acknowledgement at or below Acked changes nothing
// (it is old news); one beyond the last message sent is ErrAckAhead and
// changes nothing.
func (l *SendLog[T]) Ack(cum uint64, release func(seq uint64, v T)) error {
	if cum >= l.Next() {
		return fmt.Errorf("%w: ack %d, last sent %d", ErrAckAhead, cum, l.Next()-1)
	}
	var zero T
	for l.first <= cum {
		if release != nil {
			release(l.first, l.buf[l.head])
		}
		l.buf[l.head] = zero // let the collector have it
		l.head = (l.head + 1) & (len(l.buf) - 1)
		l.n--
		l.first++
	}
	return nil
}

// Replay is what a sender does after a lane failed: the peer, asked over
// the new lane, says it delivered every message up to delivered. Replay
// acknowledges those (calling release for each), then calls resend for
// each message after them, in order; they stay in the log until
// acknowledged. It returns how many it resent.
func (l *SendLog[T]) Replay(delivered uint64, release, resend func(seq uint64, v T)) (int, error) {
	if err := l.Ack(delivered, release); err != nil {
		return 0, err
	}
	for i := 0; i < l.n; i++ {
		resend(l.first+uint64(i), l.buf[(l.head+i)&(len(l.buf)-1)])
	}
	return l.n, nil
}

// Get returns the unacknowledged message with sequence number seq.
func (l *SendLog[T]) Get(seq uint64) (v T, ok bool) {
	if seq < l.first || seq >= l.Next() {
		return v, false
	}
	return l.buf[(l.head+int(seq-l.first))&(len(l.buf)-1)], true
}
