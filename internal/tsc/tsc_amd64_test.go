package tsc

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestNowFallback: without an invariant counter, Now (the assembly's
// jump to monotonic) returns the monotonic clock's nanoseconds since the
// package's epoch.
func TestNowFallback(t *testing.T) {
	saved := useTSC
	useTSC = false
	defer func() { useTSC = saved }()
	before := time.Since(epoch)
	got := Now()
	after := time.Since(epoch)
	if time.Duration(got) < before || time.Duration(got) > after {
		t.Fatalf("Now = %d, want within [%d, %d] ns since the epoch", got, before, after)
	}
}

// TestInvariantFlags: the counter is trusted only when the first processor
// lists both constant_tsc and nonstop_tsc.
func TestInvariantFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, text string
		want       bool
	}{
		{"both", "processor\t: 0\nflags\t\t: fpu tsc constant_tsc rep_good nonstop_tsc\n", true},
		{"constant-only", "flags\t\t: fpu tsc constant_tsc\n", false},
		{"nonstop-only", "flags\t\t: nonstop_tsc tsc\n", false},
		{"first-cpu-counts", "flags : tsc\n\nflags : constant_tsc nonstop_tsc\n", false},
		{"no-flags", "processor : 0\nmodel name : x\n", false},
		{"empty", "", false},
	}
	for _, tc := range cases {
		if got := invariantTSC(write(tc.name, tc.text)); got != tc.want {
			t.Errorf("%s: invariant = %v, want %v", tc.name, got, tc.want)
		}
	}
	if invariantTSC(filepath.Join(dir, "missing")) {
		t.Error("a missing cpuinfo file reads as invariant")
	}
}
