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
	cells []msgCell
	mask  int    // len(cells) - 1 (a power of two, at least 16)
	head  int    // cell of the oldest unacknowledged message
	n     int    // unacknowledged messages
	first uint64 // sequence number of cells[head]
	limit int
	keep  int
	big   int // cells whose buffer is larger than keep
}

// msgCell is a cell of a MsgLog.
type msgCell struct {
	b []byte // the buffer, at its full capacity
	n int    // the message's length
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
	// a free cell with room: the common case, inlined
	if c := &l.cells[(l.head+l.n)&l.mask]; l.n <= l.mask && n <= cap(c.b) {
		c.n = n
		return c.b[:n]
	}
	return l.slot(n)
}

// SlotAcked is AckAll then Slot, for a sender the peer has acknowledged
// every message logged, in the common case only: when no cell holds a
// large buffer and the cell the next message takes has room for n
// bytes, it acknowledges every message and returns that cell's buffer;
// otherwise it changes nothing and returns nil, and the caller takes
// AckAll and Slot. It costs no call: request and response traffic
// writes every message into the same cell, warm in the cache.
func (l *MsgLog) SlotAcked(n int) []byte {
	if c := &l.cells[l.head]; l.big == 0 && n <= cap(c.b) {
		l.first += uint64(l.n)
		l.n = 0
		c.n = n
		return c.b[:n]
	}
	return nil
}

// slot is Slot when the ring must grow or the cell needs a buffer.
func (l *MsgLog) slot(n int) []byte {
	if l.n == l.limit {
		return nil
	}
	if l.n == len(l.cells) {
		l.grow()
	}
	c := &l.cells[(l.head+l.n)&l.mask]
	if cap(c.b) < n {
		if cap(c.b) > l.keep {
			l.big--
		}
		b := make([]byte, max(n, l.keep))
		c.b = b[:cap(b)]
		if cap(c.b) > l.keep {
			l.big++
		}
	}
	c.n = n
	return c.b[:n]
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
	nc := make([]msgCell, size)
	for i := range l.cells {
		// the unacknowledged ones first, in order, then the free cells
		// with their buffers
		nc[i] = l.cells[(l.head+i)&(len(l.cells)-1)]
	}
	l.cells, l.mask, l.head = nc, size-1, 0
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
		if c := &l.cells[l.head]; cap(c.b) > l.keep {
			c.b = nil
			l.big--
		}
		l.head = (l.head + 1) & l.mask
		l.n--
	}
	return nil
}

// AckAll records the acknowledgement of every message committed, as
// Ack(Next()-1). Unless a cell holds a buffer larger than keep, it costs
// no loop, and the next message takes the cell of the oldest one it
// freed: a sender whose every message is acknowledged before the next
// (request and response) writes them all into one cell.
func (l *MsgLog) AckAll() {
	if l.big != 0 {
		l.Ack(l.Next() - 1)
		return
	}
	l.first += uint64(l.n)
	l.n = 0
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
	c := &l.cells[(l.head+int(seq-l.first))&l.mask]
	return c.b[:c.n], true
}
