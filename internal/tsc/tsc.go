package tsc

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// Ticks is a reading of [Now], or a difference of two.
type Ticks uint64

// Calibration is the measured rate of the counter.
type Calibration struct {
	// Source is "tsc" when Now reads the time-stamp counter, "monotonic"
	// when it reads Go's monotonic clock.
	Source string
	// TicksPerNs is the counter's rate (1 for the monotonic clock).
	TicksPerNs float64
	// Spread is (highest - lowest) / median of the windows' rates: how
	// far the windows disagreed.
	Spread float64
	// Window is the length of each calibration window.
	Window time.Duration
}

func (c Calibration) String() string {
	if c.Source != "tsc" {
		return c.Source
	}
	return fmt.Sprintf("tsc at %.4f GHz (windows of %v agree within %.2g%%)", c.TicksPerNs, c.Window, c.Spread*100)
}

var (
	once   sync.Once
	cal    Calibration
	nsTick float64 // 1 / cal.TicksPerNs
)

// Calibrate measures the counter's rate once per process and returns it;
// later calls return the first result.
func Calibrate() Calibration {
	once.Do(func() {
		cal = calibrate(20*time.Millisecond, 3)
		nsTick = 1 / cal.TicksPerNs
	})
	return cal
}

// Source says which clock [Now] reads: "tsc" or "monotonic".
func Source() string { return Calibrate().Source }

// Duration converts a number of ticks to time.
func (t Ticks) Duration() time.Duration {
	Calibrate()
	return time.Duration(float64(t) * nsTick)
}

// Converter turns ticks into durations without the calibration's
// once-check: for loops that convert every iteration.
type Converter struct{ nsPerTick float64 }

// NewConverter calibrates if that has not happened yet.
func NewConverter() Converter {
	Calibrate()
	return Converter{nsPerTick: nsTick}
}

// Duration converts a number of ticks to time.
func (c Converter) Duration(t Ticks) time.Duration { return time.Duration(float64(t) * c.nsPerTick) }

// NsPerTick is the length of one tick in nanoseconds, for converting
// many tick counts at once after a timing loop has recorded them raw.
func (c Converter) NsPerTick() float64 { return c.nsPerTick }

// Ticks converts a duration to a number of ticks (0 for a negative one).
func (c Converter) Ticks(d time.Duration) Ticks {
	if d <= 0 || c.nsPerTick <= 0 {
		return 0
	}
	return Ticks(float64(d) / c.nsPerTick)
}

// calibrate measures the rate over n windows of length w and keeps the
// median. Without an invariant counter it returns the monotonic clock.
func calibrate(w time.Duration, n int) Calibration {
	if !useTSC {
		return Calibration{Source: "monotonic", TicksPerNs: 1, Window: 0}
	}
	rates := make([]float64, 0, n)
	for len(rates) < n {
		c0, t0, ok0 := pairRead()
		c1, t1, ok1 := pairRead()
		for t1-t0 < w {
			c1, t1, ok1 = pairRead()
		}
		if !ok0 || !ok1 || c1 <= c0 {
			continue // preempted inside a pair, or the counter went back
		}
		rates = append(rates, float64(c1-c0)/float64(t1-t0))
	}
	slices.Sort(rates)
	med := rates[len(rates)/2]
	return Calibration{Source: "tsc", TicksPerNs: med, Spread: (rates[len(rates)-1] - rates[0]) / med, Window: w}
}

// pairRead reads the counter between two monotonic reads and returns the
// counter and the monotonic time at its midpoint. ok is false when the two
// monotonic reads are more than 10 µs apart (the goroutine was preempted
// or the thread descheduled between them).
func pairRead() (c Ticks, ns time.Duration, ok bool) {
	a := time.Since(epoch)
	c = rdtsc()
	b := time.Since(epoch)
	return c, a + (b-a)/2, b-a < 10*time.Microsecond
}

var epoch = time.Now()
