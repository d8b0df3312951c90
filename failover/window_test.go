package failover

import (
	"errors"
	"slices"
	"testing"
)

func TestSendLog(t *testing.T) {
	l := NewSendLog[string](40)
	for i := 1; i <= 35; i++ {
		seq, err := l.Append("m")
		if err != nil || seq != uint64(i) {
			t.Fatalf("append %d: %d, %v", i, seq, err)
		}
	}
	var freed []uint64
	rel := func(seq uint64, _ string) { freed = append(freed, seq) }
	if err := l.Ack(10, rel); err != nil || len(freed) != 10 || freed[9] != 10 || l.Acked() != 10 || l.Len() != 25 {
		t.Fatalf("ack 10: %v, freed %v, acked %d, len %d", err, freed, l.Acked(), l.Len())
	}
	if err := l.Ack(5, rel); err != nil || len(freed) != 10 {
		t.Errorf("an old ack freed %v (%v)", freed, err)
	}
	if err := l.Ack(36, rel); !errors.Is(err, ErrAckAhead) || l.Acked() != 10 {
		t.Errorf("ack of an unsent message: %v, acked %d", err, l.Acked())
	}
	// Wrap the ring: 25 held, 15 more fill it to the limit.
	for i := 0; i < 15; i++ {
		if _, err := l.Append("w"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Append("x"); !errors.Is(err, ErrLogFull) {
		t.Fatalf("append past the limit: %v", err)
	}
	if v, ok := l.Get(50); !ok || v != "w" {
		t.Errorf("Get(50) = %q, %v", v, ok)
	}
	if _, ok := l.Get(10); ok {
		t.Error("an acknowledged message is still there")
	}
	var resent []uint64
	n, err := l.Replay(47, rel, func(seq uint64, _ string) { resent = append(resent, seq) })
	if err != nil || n != 3 || !slices.Equal(resent, []uint64{48, 49, 50}) || l.Acked() != 47 || len(freed) != 47 {
		t.Fatalf("replay from 47: %d, %v, resent %v, acked %d, freed %d", n, err, resent, l.Acked(), len(freed))
	}
	if n, err := l.Replay(51, rel, nil); !errors.Is(err, ErrAckAhead) || n != 0 {
		t.Errorf("replay past the end: %d, %v", n, err)
	}
	if seq, _ := l.Append("y"); seq != 51 {
		t.Errorf("next after replay: %d", seq)
	}
}

func TestSendLogReleasesPayloads(t *testing.T) {
	l := NewSendLog[*int](4)
	for i := 0; i < 4; i++ {
		v := i
		l.Append(&v)
	}
	l.Ack(4, nil)
	for i, p := range l.buf {
		if p != nil {
			t.Errorf("slot %d still holds an acknowledged payload", i)
		}
	}
}

func TestRecvWindow(t *testing.T) {
	w := NewRecvWindow[int](4)
	var got []uint64
	deliver := func(seq uint64, v int) {
		if int(seq) != v {
			t.Fatalf("message %d carries %d", seq, v)
		}
		got = append(got, seq)
	}
	accept := func(seq uint64, want Verdict) {
		t.Helper()
		v, err := w.Accept(seq, int(seq), deliver)
		if err != nil || v != want {
			t.Fatalf("Accept(%d) = %v, %v; want %v", seq, v, err, want)
		}
	}
	accept(1, Delivered)
	accept(1, Duplicate)
	accept(3, Held)
	accept(5, Held)
	accept(3, Duplicate) // held already
	if _, err := w.Accept(6, 6, deliver); !errors.Is(err, ErrGap) {
		t.Fatalf("6 while 2 is missing, window 4: %v", err)
	}
	if w.Held() != 2 {
		t.Fatalf("held %d", w.Held())
	}
	accept(2, Delivered) // delivers 2, 3
	if !slices.Equal(got, []uint64{1, 2, 3}) || w.Delivered() != 3 {
		t.Fatalf("delivered %v, up to %d", got, w.Delivered())
	}
	accept(4, Delivered) // and 5
	accept(6, Delivered)
	if !slices.Equal(got, []uint64{1, 2, 3, 4, 5, 6}) || w.Held() != 0 || w.Duplicates() != 2 {
		t.Fatalf("delivered %v, held %d, dups %d", got, w.Held(), w.Duplicates())
	}
	if cum, ok := w.TakeAck(); !ok || cum != 6 || w.Owed() != 0 {
		t.Errorf("TakeAck = %d, %v; owed %d", cum, ok, w.Owed())
	}
	if _, ok := w.TakeAck(); ok {
		t.Error("a second ack with nothing new")
	}
	if _, err := w.Accept(0, 0, deliver); !errors.Is(err, ErrSeqZero) {
		t.Errorf("seq 0: %v", err)
	}
	accept(8, Held)
	accept(9, Held)
	if n := w.Drop(); n != 2 || w.Held() != 0 {
		t.Errorf("Drop: %d, held %d", n, w.Held())
	}
	accept(7, Delivered)
	if w.Delivered() != 7 {
		t.Errorf("after Drop, 7 delivered %d", w.Delivered())
	}
	// No reorder window: anything ahead is a gap.
	z := NewRecvWindow[int](0)
	if _, err := z.Accept(2, 2, deliver); !errors.Is(err, ErrGap) {
		t.Errorf("window 0: %v", err)
	}
}

func TestUnwrap32(t *testing.T) {
	cases := []struct {
		ref  uint64
		low  uint32
		want uint64
	}{
		{0, 1, 1},
		{100, 101, 101},
		{100, 90, 90},
		{1<<32 - 5, 3, 1<<32 + 3},          // wrapped forward
		{1<<32 + 3, 0xfffffffe, 1<<32 - 2}, // a late one from before the wrap
		{5, 0xfffffff0, 0xfffffff0},        // never below the first epoch
		{7 << 32, 0x10, 7<<32 + 0x10},
	}
	for _, c := range cases {
		if got := Unwrap32(c.ref, c.low); got != c.want {
			t.Errorf("Unwrap32(%#x, %#x) = %#x, want %#x", c.ref, c.low, got, c.want)
		}
	}
}
