package failover

import "fmt"

// MsgLog is a SendLog of messages kept as bytes, whose cells are reused
// in place: the sender writes a message straight into the buffer of the
// next cell (Slot), sends it from there and numbers it (Commit). An
// acknowledgement only moves the ring's head; the acknowledged cells keep
// their buffers for the messages that come round to them again, so a
// steady stream of messages that fit the cells allocates and copies
// nothing beyond writing each message once. A cell whose buffer grew past
// the log's keep size (a large message) drops it when acknowledged, so the
// memory held by an idle log stays near Limit times keep.
//
// Sequence numbers start at 1, as in SendLog. The ring has a power-of-two
// number of cells and grows by doubling up to the limit.
type MsgLog struct {
	cells [][]byte // each cell's buffer, at its full capacity
	lens  []int32  // each cell's message length
	mask  int      // len(cells) - 1 (a power of two, at least 16)
	head  int      // cell of the oldest unacknowledged message
	n     int      // unacknowledged messages
	first uint64   // sequence number of cells[head]
	limit int
	keep  int
}

// NewMsgLog makes a log that holds at most limit unacknowledged messages
// (at least 1) in cells of at least keep bytes, which keep their buffers
// up to keep bytes across acknowledgements.
func NewMsgLog(limit, keep int) *MsgLog {
	l := &MsgLog{first: 1, limit: max(1, limit), keep: max(1, keep)}
	l.grow()
	return l
}

// Next is the sequence number the next Commit returns.
func (l *MsgLog) Next() uint64 { return l.first + uint64(l.n) }

// Acked is the highest sequence number acknowledged (0: none).
func (l *MsgLog) Acked() uint64 { return l.first - 1 }

// Len is the number of unacknowledged messages.
func (l *MsgLog) Len() int { return l.n }

// Limit is the most unacknowledged messages the log holds.
func (l *MsgLog) Limit() int { return l.limit }

// Slot returns the buffer, n bytes long, of the cell the next message
// takes, for the caller to write the message into; nil when the log is
// full. The message is not in the log until Commit: a Slot not committed
// is taken again by the next Slot.
func (l *MsgLog) Slot(n int) []byte {
	if i := (l.head + l.n) & l.mask; l.n <= l.mask && n <= cap(l.cells[i]) {
		l.lens[i] = int32(n) // a free cell with room: the common case
		return l.cells[i][:n]
	}
	return l.slot(n)
}

// slot is Slot when the ring must grow or the cell needs a buffer.
func (l *MsgLog) slot(n int) []byte {
	if l.n == l.limit {
		return nil
	}
	if l.n == len(l.cells) {
		l.grow()
	}
	i := (l.head + l.n) & l.mask
	if cap(l.cells[i]) < n {
		b := make([]byte, max(n, l.keep))
		l.cells[i] = b[:cap(b)]
	}
	l.lens[i] = int32(n)
	return l.cells[i][:n]
}

// Commit numbers the message written into the last Slot (which must
// have returned a buffer) and keeps it until it is acknowledged.
func (l *MsgLog) Commit() uint64 {
	l.n++
	return l.first + uint64(l.n-1)
}

func (l *MsgLog) grow() {
	size := 16
	for size < 2*len(l.cells) || size < l.n+1 {
		size *= 2
	}
	nc, nl := make([][]byte, size), make([]int32, size)
	for i := range l.cells {
		// the unacknowledged ones first, in order, then the free cells
		// with their buffers
		j := (l.head + i) & (len(l.cells) - 1)
		nc[i], nl[i] = l.cells[j], l.lens[j]
	}
	l.cells, l.lens, l.mask, l.head = nc, nl, size-1, 0
}

// Ack records a cumulative acknowledgement: the peer has delivered every
// message up to cum. One at or below Acked changes nothing; one beyond
// the last message committed is ErrAckAhead and changes nothing. The
// buffers of the messages it frees stay with their cells (up to keep
// bytes) for later messages: the caller must not hold on to them.
func (l *MsgLog) Ack(cum uint64) error {
	if cum >= l.first+uint64(l.n) {
		return l.ahead(cum)
	}
	for ; l.first <= cum; l.first++ {
		if cap(l.cells[l.head]) > l.keep {
			l.cells[l.head] = nil
		}
		l.head = (l.head + 1) & (len(l.cells) - 1)
		l.n--
	}
	return nil
}

func (l *MsgLog) ahead(cum uint64) error {
	return fmt.Errorf("%w: ack %d, last sent %d", ErrAckAhead, cum, l.Next()-1)
}

// Get returns the unacknowledged message with sequence number seq, in
// its cell: it may be changed in place (a replay updates its header) and
// is valid until acknowledged.
func (l *MsgLog) Get(seq uint64) (b []byte, ok bool) {
	if seq < l.first || seq >= l.Next() {
		return nil, false
	}
	i := (l.head + int(seq-l.first)) & (len(l.cells) - 1)
	return l.cells[i][:l.lens[i]], true
}
