package ucp

import (
	"errors"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// FuzzDecodeProbe: a probe or its answer decodes only at its exact
// length, re-encodes to the same bytes, and bad input is an
// ErrInvalidParam, never a panic.
func FuzzDecodeProbe(f *testing.F) {
	f.Add(probeMsg{dst: 1, lane: 0, seq: 1}.encode(nil))
	f.Add(probeMsg{dst: 0xffffffff, lane: 0xff, seq: 0xffffffff}.encode(nil))
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(make([]byte, 10))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeProbe(b)
		if err != nil {
			if !errors.Is(err, uct.ErrInvalidParam) {
				t.Fatalf("error %v does not wrap ErrInvalidParam", err)
			}
			if len(b) == probeLen {
				t.Fatalf("%d bytes refused: %v", len(b), err)
			}
			return
		}
		if got := m.encode(nil); string(got) != string(b) {
			t.Fatalf("round trip %x -> %+v -> %x", b, m, got)
		}
	})
}

// TestProbeWire: the fields land where the wire comment says (dst first,
// so laneOK finds the endpoint).
func TestProbeWire(t *testing.T) {
	b := probeMsg{dst: 0x04030201, lane: 5, seq: 0x09080706}.encode(nil)
	want := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}
	if string(b) != string(want) {
		t.Fatalf("encoded %x, want %x", b, want)
	}
	if dst, ok := msgDst(amProbeRep, b); !ok || dst != 0x04030201 {
		t.Fatalf("msgDst %x %v", dst, ok)
	}
	if _, err := decodeProbe(append(b, 0)); !errors.Is(err, uct.ErrInvalidParam) {
		t.Fatalf("10 bytes: %v", err)
	}
}
