package tsc

import (
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
