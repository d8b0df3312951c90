package tsc

import (
	"testing"
	"time"
)

// TestAgainstMonotonic times sleeps and busy spins of several lengths with
// both clocks; the counter, converted, must agree with the monotonic clock
// within 1 % plus the cost of the reads.
func TestAgainstMonotonic(t *testing.T) {
	c := Calibrate()
	t.Logf("calibration: %v", c)
	if c.TicksPerNs <= 0 {
		t.Fatalf("rate %v", c.TicksPerNs)
	}
	conv := NewConverter()
	spin := func(d time.Duration) {
		for s := time.Now(); time.Since(s) < d; {
		}
	}
	sleep := time.Sleep
	cases := []struct {
		name string
		do   func(time.Duration)
		d    time.Duration
	}{
		{"spin-1ms", spin, time.Millisecond},
		{"spin-10ms", spin, 10 * time.Millisecond},
		{"sleep-5ms", sleep, 5 * time.Millisecond},
		{"sleep-50ms", sleep, 50 * time.Millisecond},
	}
	for _, tc := range cases {
		// A loaded machine can deschedule the thread between the paired
		// reads; a case passes if one of five tries agrees.
		var last string
		ok := false
		for try := 0; try < 5 && !ok; try++ {
			m0, c0 := time.Now(), Now()
			tc.do(tc.d)
			c1, m1 := Now(), time.Since(m0)
			got := conv.Duration(c1 - c0)
			diff := got - m1
			if diff < 0 {
				diff = -diff
			}
			ok = diff <= m1/100+20*time.Microsecond
			last = got.String() + " by the counter, " + m1.String() + " by the monotonic clock"
		}
		if !ok {
			t.Errorf("%s: %s", tc.name, last)
		}
	}
}

func TestTicksDuration(t *testing.T) {
	c := Calibrate()
	n := Ticks(c.TicksPerNs * 1e6) // one millisecond of ticks
	if d := n.Duration(); d < 999*time.Microsecond || d > 1001*time.Microsecond {
		t.Fatalf("%d ticks at %v/ns = %v, want 1ms", n, c.TicksPerNs, d)
	}
}

func TestConverterTicksRoundTrip(t *testing.T) {
	conv := NewConverter()
	n := conv.Ticks(time.Millisecond)
	if d := conv.Duration(n); d < 999*time.Microsecond || d > 1001*time.Microsecond {
		t.Fatalf("a millisecond is %d ticks, which convert back to %v", n, d)
	}
	if ns := float64(n) * conv.NsPerTick(); ns < 999e3 || ns > 1001e3 {
		t.Fatalf("%d ticks at %v ns/tick = %v ns, want 1e6", n, conv.NsPerTick(), ns)
	}
	if conv.Ticks(-time.Second) != 0 || (Converter{}).Ticks(time.Second) != 0 {
		t.Fatal("a negative duration or an uncalibrated converter gives ticks")
	}
}

func TestNowMonotonic(t *testing.T) {
	prev := Now()
	for i := 0; i < 100000; i++ {
		n := Now()
		if n < prev {
			t.Fatalf("read %d went back: %d after %d", i, n, prev)
		}
		prev = n
	}
}

// BenchmarkNow is the cost of one read of the counter.
func BenchmarkNow(b *testing.B) {
	Calibrate()
	var sink Ticks
	for b.Loop() {
		sink += Now()
	}
	_ = sink
}

// BenchmarkNowConvert is a read and a conversion, as a timing loop pays per
// iteration.
func BenchmarkNowConvert(b *testing.B) {
	conv := NewConverter()
	base := Now()
	var sink time.Duration
	for b.Loop() {
		sink += conv.Duration(Now() - base)
	}
	_ = sink
}

// BenchmarkTimeSince is what the same read costs through Go's monotonic
// clock.
func BenchmarkTimeSince(b *testing.B) {
	base := time.Now()
	var sink time.Duration
	for b.Loop() {
		sink += time.Since(base)
	}
	_ = sink
}
