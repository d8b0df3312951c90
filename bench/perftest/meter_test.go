package main

import (
	"testing"

	"github.com/ucgo/ucgo/bench/perftest/internal/report"
	"github.com/ucgo/ucgo/internal/tsc"
)

// The meter keeps one sample per measured iteration whether the loop
// calls mark or runs stamp inline, both into the recorder's own memory
// and, for a recorder that keeps every k-th iteration, through the
// batch; a warm-up (no recorder) before a phase adds nothing to it.
func TestMeterKeepsEveryIteration(t *testing.T) {
	var m meter
	m.calibrate()
	for _, n := range []int{1, markBatch - 1, markBatch, 3*markBatch + 5} {
		rec := report.NewRecorder(n)
		m.rec = nil // warm-up, as runPhase runs it
		for i := range 2*markBatch + 3 {
			m.mark(i)
			if now := tsc.Now(); m.stamp(now) {
				m.lap(i, now)
			}
		}
		m.start(rec, 8, n)
		for i := range n {
			if i%2 == 0 {
				m.mark(i)
			} else if now := tsc.Now(); m.stamp(now) {
				m.lap(i, now)
			}
		}
		m.stop()
		if rec.Len() != n {
			t.Errorf("%d iterations: %d samples kept", n, rec.Len())
		}
		if got := len(rec.Last()); got != min(n, report.TimingQueue) {
			t.Errorf("%d iterations: %d in the timing queue", n, got)
		}
	}

	// More iterations than a recorder keeps one by one: it keeps every
	// second, and every one of the last TimingQueue.
	const n = 5*markBatch + 7
	rec := report.NewRecorder(2*report.MaxSamples + 1)
	m.start(rec, 8, n)
	for i := range n {
		if now := tsc.Now(); m.stamp(now) {
			m.lap(i, now)
		}
	}
	m.stop()
	if rec.Len() != n/2+n%2 {
		t.Errorf("strided: %d samples kept, want %d", rec.Len(), n/2+n%2)
	}
	if got := len(rec.Last()); got != n {
		t.Errorf("strided: %d in the timing queue, want %d", got, n)
	}
}
