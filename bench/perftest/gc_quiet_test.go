package main

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/ucgo/ucgo/bench/perftest/internal/report"
)

var gcSink []byte

// A phase run under quietGC sees no garbage collection, even one that
// allocates enough to start several, and the collector's settings are
// back once it ends.
func TestQuietGCKeepsCollectionsOut(t *testing.T) {
	percent := debug.SetGCPercent(100)
	defer debug.SetGCPercent(percent)
	limit := debug.SetMemoryLimit(-1)

	numGC := func() uint32 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.NumGC
	}
	restore := quietGC()
	before := numGC()
	for range 64 {
		gcSink = make([]byte, 1<<20) // 64 MiB in all, many times the heap
	}
	after := numGC()
	restore()
	gcSink = nil
	if after != before {
		t.Errorf("%d garbage collections ran during the phase, want none", after-before)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("GC percent after the phase: %d, want 100", p)
	}
	if l := debug.SetMemoryLimit(-1); l != limit {
		t.Errorf("memory limit after the phase: %d, want %d", l, limit)
	}

	// the same allocations without quietGC do collect: the check above
	// can fail
	before = numGC()
	for range 64 {
		gcSink = make([]byte, 1<<20)
	}
	gcSink = nil
	if numGC() == before {
		t.Error("64 MiB of allocations ran no garbage collection")
	}
}

// gcProbeSide is a side whose runs record the GC percent in force.
type gcProbeSide struct {
	meter
	percents []int
}

func (s *gcProbeSide) setup() setup        { return setup{} }
func (s *gcProbeSide) connect(setup) error { return nil }
func (s *gcProbeSide) zero()               {}
func (s *gcProbeSide) timer() *meter       { return &s.meter }
func (s *gcProbeSide) Close() error        { return nil }
func (s *gcProbeSide) run(_, _ int) error {
	p := debug.SetGCPercent(-1) // reads the setting (and leaves it off)
	debug.SetGCPercent(p)
	s.percents = append(s.percents, p)
	return nil
}

type nopOOB struct{}

func (nopOOB) exchange(setup) (setup, error) { return setup{}, nil }
func (nopOOB) barrier() error                { return nil }
func (nopOOB) Close() error                  { return nil }

// runPhase runs the warm-up and the measured iterations of a size with
// the collector off, and turns it back on after them.
func TestPhaseRunsWithoutGC(t *testing.T) {
	percent := debug.SetGCPercent(100)
	defer debug.SetGCPercent(percent)
	s := &gcProbeSide{}
	s.calibrate()
	cfg := &config{Iters: 10, Warmup: 10}
	if _, err := runPhase(s, nopOOB{}, &testDef{name: "probe"}, cfg, 8, report.NewRecorder(10), true); err != nil {
		t.Fatal(err)
	}
	if len(s.percents) != 2 {
		t.Fatalf("%d runs, want the warm-up and the measured one", len(s.percents))
	}
	for i, p := range s.percents {
		if p != -1 {
			t.Errorf("run %d ran with GC percent %d, want -1 (off)", i, p)
		}
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("GC percent after the phase: %d, want 100", p)
	}
}
