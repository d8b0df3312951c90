package failover

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// put writes msg into the log's next cell and commits it.
func put(t *testing.T, l *MsgLog, msg []byte) uint64 {
	t.Helper()
	b := l.Slot(len(msg))
	if b == nil {
		t.Fatalf("log full at %d messages", l.Len())
	}
	copy(b, msg)
	return l.Commit()
}

func msgOf(seq uint64, n int) []byte {
	b := bytes.Repeat([]byte{byte(seq)}, n)
	copy(b, fmt.Sprint(seq))
	return b
}

// TestMsgLogReuse: acknowledged cells give their buffers to the messages
// that come round to them: a stream through the ring allocates nothing
// once every cell has been used.
func TestMsgLogReuse(t *testing.T) {
	l := NewMsgLog(64, 64)
	for seq := uint64(1); seq <= 16; seq++ {
		put(t, l, msgOf(seq, 40))
		if err := l.Ack(seq); err != nil {
			t.Fatal(err)
		}
	}
	first := l.Slot(40)
	allocs := testing.AllocsPerRun(1000, func() {
		b := l.Slot(40)
		b[0] = 1
		seq := l.Commit()
		l.Ack(seq)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per message through warm cells, want 0", allocs)
	}
	// 16 cells: message s takes cell (s-1)%16
	for (l.Next()-1)%16 != 0 {
		l.Slot(40)
		seq := l.Commit()
		l.Ack(seq)
	}
	if again := l.Slot(40); &again[0] != &first[0] {
		t.Fatalf("a message round the ring got a new buffer, want its cell's")
	}
}

// TestMsgLogWrapReplay: messages go round the ring many times with
// acknowledgements that lag; after each round, what is unacknowledged
// reads back (as a replay sends it) byte for byte and in order, also
// after the ring grew while wrapped and after cells were reused with
// messages of other sizes.
func TestMsgLogWrapReplay(t *testing.T) {
	l := NewMsgLog(40, 32)
	var acked uint64
	for seq := uint64(1); seq <= 2000; seq++ {
		n := 8 + int(seq*7%50) // some larger than the cells keep
		if got := put(t, l, msgOf(seq, n)); got != seq {
			t.Fatalf("message numbered %d, want %d", got, seq)
		}
		if seq%13 == 0 || l.Len() == l.Limit() {
			// the peer acknowledges most of it; the rest is replayed
			acked = seq - uint64(seq%5)
			if err := l.Ack(acked); err != nil {
				t.Fatal(err)
			}
			for s := acked + 1; s <= seq; s++ {
				b, ok := l.Get(s)
				want := msgOf(s, 8+int(s*7%50))
				if !ok || !bytes.Equal(b, want) {
					t.Fatalf("after ack %d: message %d reads %q (%v), want %q", acked, s, b, ok, want)
				}
			}
			if _, ok := l.Get(acked); ok && acked > 0 {
				t.Fatalf("message %d acknowledged yet readable", acked)
			}
		}
	}
	if l.Acked() != acked || l.Next() != 2001 {
		t.Fatalf("acked %d next %d, want %d and 2001", l.Acked(), l.Next(), acked)
	}
}

// TestMsgLogLimits: a full log has no slot, an
// acknowledgement of what was never sent changes nothing, and a large
// message's buffer leaves its cell when acknowledged.
func TestMsgLogLimits(t *testing.T) {
	l := NewMsgLog(3, 16)
	for i := 0; i < 3; i++ {
		put(t, l, []byte("abc"))
	}
	if b := l.Slot(3); b != nil {
		t.Fatalf("slot of a full log: %q", b)
	}
	if err := l.Ack(4); !errors.Is(err, ErrAckAhead) || l.Acked() != 0 {
		t.Fatalf("ack ahead: %v, acked %d", err, l.Acked())
	}
	if err := l.Ack(3); err != nil || l.Len() != 0 {
		t.Fatalf("ack 3: %v, %d left", err, l.Len())
	}
	big := put(t, l, make([]byte, 1000))
	i := (l.head + l.n - 1) & (len(l.cells) - 1)
	if err := l.Ack(big); err != nil {
		t.Fatal(err)
	}
	if l.cells[i].b != nil || l.big != 0 {
		t.Fatalf("a %d-byte buffer stayed in its cell (keep %d, %d large)", cap(l.cells[i].b), l.keep, l.big)
	}
}

// TestMsgLogModel: random sends (some abandoned before Commit, as a send
// refused for lack of resources is), acknowledgements (some old, some
// ahead) and replays on a MsgLog agree with a SendLog of copies.
func TestMsgLogModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	l, m := NewMsgLog(64, 32), NewSendLog[[]byte](64)
	for step := 0; step < 200000; step++ {
		switch op := rng.IntN(10); {
		case op < 6: // send
			n := 1 + rng.IntN(80)
			var b []byte
			if rng.IntN(4) == 0 {
				// the peer acknowledged everything before this one
				if b = l.SlotAcked(n); b == nil {
					l.AckAll()
					if b = l.Slot(n); b == nil {
						t.Fatalf("step %d: no slot after acknowledging all", step)
					}
				}
				m.Ack(m.Next()-1, nil)
			} else {
				b = l.Slot(n)
			}
			if (b == nil) != (m.Len() == m.Limit()) {
				t.Fatalf("step %d: slot %v with %d of %d held", step, b != nil, m.Len(), m.Limit())
			}
			if b == nil {
				continue
			}
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			if rng.IntN(8) == 0 {
				continue // refused: not committed
			}
			seq := l.Commit()
			want, _ := m.Append(append([]byte(nil), b...))
			if seq != want {
				t.Fatalf("step %d: committed %d, model %d", step, seq, want)
			}
		case op < 8: // ack
			cum := m.Acked() + uint64(rng.IntN(m.Len()+3)) - 1
			e1, e2 := l.Ack(cum), m.Ack(cum, nil)
			if (e1 == nil) != (e2 == nil) || e1 != nil && !errors.Is(e1, ErrAckAhead) {
				t.Fatalf("step %d: ack %d: %v, model %v", step, cum, e1, e2)
			}
		case op < 9: // ack all
			l.AckAll()
			m.Ack(m.Next()-1, nil)
		default: // replay what is held
			for seq := m.Acked() + 1; seq < m.Next(); seq++ {
				got, ok := l.Get(seq)
				want, _ := m.Get(seq)
				if !ok || !bytes.Equal(got, want) {
					t.Fatalf("step %d: message %d reads %x (%v), model %x", step, seq, got, ok, want)
				}
			}
		}
		big := 0
		for _, c := range l.cells {
			if cap(c.b) > l.keep {
				big++
			}
		}
		if big != l.big {
			t.Fatalf("step %d: %d cells hold large buffers, the log counts %d", step, big, l.big)
		}
		if l.Len() != m.Len() || l.Next() != m.Next() || l.Acked() != m.Acked() {
			t.Fatalf("step %d: len %d next %d acked %d, model %d %d %d", step, l.Len(), l.Next(), l.Acked(), m.Len(), m.Next(), m.Acked())
		}
	}
}

// TestMsgLogAckAllOneCell: messages each acknowledged (AckAll, or
// SlotAcked for the next) before the next one all take the same cell, so request-response traffic keeps
// one buffer warm; after a large message the next ones still read back
// whole.
func TestMsgLogAckAllOneCell(t *testing.T) {
	l := NewMsgLog(64, 64)
	put(t, l, msgOf(1, 40))
	l.AckAll()
	first := l.Slot(40)
	for seq := uint64(2); seq <= 100; seq++ {
		n := 40
		if seq == 50 {
			n = 500 // larger than keep: the next AckAll frees its buffer
		}
		var b []byte
		if seq%2 == 0 {
			b = l.SlotAcked(n)
			if (b == nil) != (n > cap(first)) {
				t.Fatalf("message %d of %d bytes: SlotAcked gave %v", seq, n, b != nil)
			}
		}
		if b == nil {
			l.AckAll()
			b = l.Slot(n)
		}
		if n == 40 && &b[0] != &first[0] {
			t.Fatalf("message %d got another cell than the one just freed", seq)
		}
		copy(b, msgOf(seq, n))
		if got := l.Commit(); got != seq {
			t.Fatalf("message numbered %d, want %d", got, seq)
		}
		if got, ok := l.Get(seq); !ok || !bytes.Equal(got, msgOf(seq, n)) {
			t.Fatalf("message %d reads %q, %v", seq, got, ok)
		}
		l.AckAll()
		if l.Len() != 0 || l.Acked() != seq {
			t.Fatalf("after AckAll of %d: %d held, acked %d", seq, l.Len(), l.Acked())
		}
		if seq == 50 {
			first = l.Slot(40)
		}
	}
	if l.big != 0 {
		t.Fatalf("%d large buffers kept after their messages were acknowledged", l.big)
	}
}
