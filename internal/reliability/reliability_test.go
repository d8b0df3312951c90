package reliability

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTally(t *testing.T) {
	tl := NewTally(256)
	for _, s := range []uint64{0, 1, 3, 2, 3, 5, 199, 300, 4} {
		tl.Add(s)
	}
	if tl.Count != 7 || tl.Dups != 1 || tl.Reordered != 2 || tl.Range != 1 {
		t.Fatalf("count %d dups %d reordered %d range %d, want 7 1 2 1", tl.Count, tl.Dups, tl.Reordered, tl.Range)
	}
	back := FromBitmap(tl.Bitmap())
	for s := uint64(0); s < 256; s++ {
		if back.Has(s) != tl.Has(s) {
			t.Fatalf("seq %d: %v after the round trip, %v before", s, back.Has(s), tl.Has(s))
		}
	}
	if back.Count != tl.Count {
		t.Fatalf("count %d after the round trip, %d before", back.Count, tl.Count)
	}
}

func TestPayload(t *testing.T) {
	b := make([]byte, 100)
	Fill(b, 12345)
	if s, err := Check(b); err != nil || s != 12345 {
		t.Fatalf("check: %d %v", s, err)
	}
	b[50] ^= 1
	if _, err := Check(b); !errors.Is(err, ErrPayload) {
		t.Fatalf("a flipped bit passed: %v", err)
	}
	if _, err := Check(b[:7]); !errors.Is(err, ErrPayload) {
		t.Fatalf("7 bytes passed: %v", err)
	}
}

func TestRowProblems(t *testing.T) {
	clean := Row{Scenario: "x", Sent: 10, Delivered: 10, Path: true, Detect: -1, Failover: time.Millisecond, Failback: -1}
	if p := clean.Problems(); len(p) != 0 {
		t.Fatalf("clean row: %v", p)
	}
	lost := clean
	lost.Lost, lost.Reordered, lost.Failed = 1, 2, 3
	if p := lost.Problems(); len(p) != 3 {
		t.Fatalf("lost, reordered and failed with a path: %v", p)
	}
	lost.Path = false
	if p := lost.Problems(); len(p) != 0 {
		t.Fatalf("without a path, losses are allowed: %v", p)
	}
	lost.Duplicated, lost.Completions = 1, 1
	if p := lost.Problems(); len(p) != 2 {
		t.Fatalf("duplicates and double completions are never allowed: %v", p)
	}
	var b strings.Builder
	Table(&b, []Row{clean})
	if !strings.Contains(b.String(), "failover") || !strings.Contains(b.String(), "1ms") || !strings.Contains(b.String(), " - ") {
		t.Fatalf("table:\n%s", b.String())
	}
}
