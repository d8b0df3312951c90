package failover

import (
	"encoding/binary"
	"errors"
	"testing"
)

// FuzzRecvWindow feeds a window arbitrary sequence numbers (a peer's
// messages, replays and forgeries) and checks that it never panics,
// delivers in order and at most once, and holds no more than its size.
func FuzzRecvWindow(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4}, uint8(4))
	f.Add([]byte{3, 1, 2, 2, 9, 4, 5, 6, 7, 8}, uint8(8))
	f.Add([]byte{0, 0xff, 1}, uint8(0))
	f.Fuzz(func(t *testing.T, seqs []byte, size uint8) {
		w := NewRecvWindow[uint64](int(size % 64))
		var last uint64
		deliver := func(seq, v uint64) {
			if seq != last+1 || v != seq {
				t.Fatalf("delivered %d (payload %d) after %d", seq, v, last)
			}
			last = seq
		}
		for i := 0; i+1 < len(seqs); i += 2 {
			seq := uint64(binary.LittleEndian.Uint16(seqs[i:]))
			if seqs[i]&0x80 != 0 {
				seq = last + uint64(seqs[i+1]%80) // near the window
			}
			v, err := w.Accept(seq, seq, deliver)
			switch {
			case err == nil:
			case errors.Is(err, ErrGap), errors.Is(err, ErrSeqZero):
				if v != Duplicate {
					t.Fatalf("an error with verdict %v", v)
				}
			default:
				t.Fatalf("Accept(%d): %v", seq, err)
			}
			if w.Held() > int(size%64) || w.Delivered() != last {
				t.Fatalf("held %d (size %d), delivered %d vs %d", w.Held(), size%64, w.Delivered(), last)
			}
		}
	})
}

// FuzzSendLog appends and acknowledges in arbitrary order, with
// acknowledgements a peer may forge, and checks the log's accounting.
func FuzzSendLog(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 2, 0, 3, 9}, uint8(4))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 5, 3}, uint8(2))
	f.Fuzz(func(t *testing.T, ops []byte, limit uint8) {
		l := NewSendLog[uint64](int(limit%40) + 1)
		released := uint64(0)
		rel := func(seq, v uint64) {
			if seq != released+1 || v != seq {
				t.Fatalf("released %d (payload %d) after %d", seq, v, released)
			}
			released = seq
		}
		for i := 0; i+1 < len(ops); i += 2 {
			switch ops[i] % 3 {
			case 0:
				seq, err := l.Append(l.Next())
				if err != nil && !errors.Is(err, ErrLogFull) {
					t.Fatal(err)
				}
				if err == nil && seq != l.Next()-1 {
					t.Fatalf("append got %d, next %d", seq, l.Next())
				}
			case 1:
				// From 8 below the last acknowledgement (old news, or
				// below 0: far beyond anything sent) to far ahead.
				cum := l.Acked() + uint64(ops[i+1]%48) - 8
				next := l.Next()
				err := l.Ack(cum, rel)
				if wantErr := cum >= next; (err != nil) != wantErr || (err != nil && !errors.Is(err, ErrAckAhead)) {
					t.Fatalf("Ack(%d) with next %d: %v", cum, next, err)
				}
			case 2:
				want := l.Next() - l.Acked() - 1
				var n uint64
				_, err := l.Replay(l.Acked(), rel, func(seq, v uint64) { n++ })
				if err != nil || n != want {
					t.Fatalf("replay resent %d of %d: %v", n, want, err)
				}
			}
			if uint64(l.Len()) != l.Next()-1-l.Acked() || l.Len() > l.Limit() || released != l.Acked() {
				t.Fatalf("len %d, next %d, acked %d, released %d", l.Len(), l.Next(), l.Acked(), released)
			}
		}
	})
}

// FuzzUnwrap32: a number within 2^31 of the reference comes back whole
// from its low 32 bits.
func FuzzUnwrap32(f *testing.F) {
	f.Add(uint64(0), int32(5))
	f.Add(uint64(1<<32-3), int32(10))
	f.Add(uint64(1<<40), int32(-1<<31+1))
	f.Fuzz(func(t *testing.T, ref uint64, delta int32) {
		v := ref + uint64(int64(delta))
		if (delta < 0 && v > ref) || (delta > 0 && v < ref) {
			return // wrapped around 2^64
		}
		if delta == -1<<31 {
			return // exactly half-way: either answer is nearest
		}
		if got := Unwrap32(ref, uint32(v)); got != v {
			t.Fatalf("Unwrap32(%#x, %#x) = %#x, want %#x", ref, uint32(v), got, v)
		}
	})
}
