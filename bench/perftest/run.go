package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ucgo/ucgo/bench/perftest/internal/report"
	"github.com/ucgo/ucgo/internal/cpupin"
)

// checkRunnable says whether cfg's test and transport can run here.
func checkRunnable(cfg *config) (*testDef, error) {
	t := findTest(cfg.Test)
	if t == nil {
		return nil, fmt.Errorf("%w: unknown test %q", errUsage, cfg.Test)
	}
	if err := t.available(); err != nil {
		return nil, err
	}
	tr := findTransport(cfg.Transport)
	if tr == nil {
		return nil, fmt.Errorf("%w: unknown transport %q", errUsage, cfg.Transport)
	}
	if err := tr.available(); err != nil {
		return nil, err
	}
	if cfg.ErrMode == "failover" && t.level == levelUCT {
		return nil, fmt.Errorf("%w: -e failover: uct never fails over (failover is a ucp policy); use -e none or -e peer", errUsage)
	}
	if t.rmaPoll && cfg.Wait == "sleep" {
		return nil, fmt.Errorf("%w: %s polls memory written by the peer, which wakes no one; use -E poll", errUsage, t.name)
	}
	return t, nil
}

// pin confines the process to cpu (cpupin.Process): every thread, not
// only the one that runs the test, and GOMAXPROCS 1; the test goroutine
// is not locked to its thread. The runtime preempts a goroutine that has
// run for 10 ms; one locked to its thread then gives its P to another
// thread, which gives it back (a runtime trace shows four to five P
// transitions per preemption), and these threads, unpinned, take their
// CPU time from either side of a ping-pong when both spin on a two-CPU
// host. Unlocked, with one P, the preempted goroutine goes on at once on
// its own thread, and the runtime's threads (sysmon, the network poller)
// run on the process's own CPU. The process stays pinned until it exits.
func pin(cpu int) { cpupin.Process(cpu) }

// side is one side of a run at either level: a uct session or a ucp
// session.
type side interface {
	// setup is what the peer needs to connect and to reach our buffer.
	setup() setup
	connect(peer setup) error
	// zero clears the buffers before a size runs.
	zero()
	// run runs iters iterations of the test at size on this side.
	run(size, iters int) error
	timer() *meter
	Close() error
}

// newSide opens this side's session of test t. Its meter is calibrated
// here, before any barrier: calibrating spins for some 60 ms (longer on
// a loaded host), which between a barrier and the measured phase would
// start one side's phase that much later than the other's.
func newSide(cfg *config, t *testDef, initiator bool) (side, error) {
	var s side
	var err error
	if t.level == levelUCP {
		s, err = newUCPSession(cfg, t, initiator)
	} else {
		s, err = newSession(cfg, t, initiator)
	}
	if err != nil {
		return nil, err
	}
	s.timer().calibrate()
	return s, nil
}

// runSide runs every size of cfg's test on one side. The initiator writes
// the results to out (nil on the responder) and progress to progress.
func runSide(cfg *config, ch oob, initiator bool, out *report.Writer, progress io.Writer) (err error) {
	t, err := checkRunnable(cfg)
	if err != nil {
		return err
	}
	s, err := newSide(cfg, t, initiator)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	defer progressBarriers(ch, s)()
	peer, err := ch.exchange(s.setup())
	if err != nil {
		return fmt.Errorf("exchange: %w", err)
	}
	if err := s.connect(peer); err != nil {
		return err
	}
	m := s.timer()
	if initiator {
		m.progress = progress
	}
	sizes := t.sizes(cfg.Sizes)
	rec := report.NewRecorder(cfg.Iters)
	for _, size := range sizes {
		s.zero()
		// Both sides leave the barrier and go straight into the warm-up,
		// as ucx_perftest does: a process that just woke from the
		// barrier's wait runs its short phase within its scheduling
		// slice, where one that spun first (burning CPU time the
		// scheduler charges it for) is the one preempted for
		// milliseconds in the middle of the measured phase on a busy
		// host.
		elapsed, err := runPhase(s, ch, t, cfg, size, rec, initiator)
		if err != nil {
			return err
		}
		if m.progress != nil && elapsed >= time.Second {
			fmt.Fprint(m.progress, "\r\x1b[K")
		}
		if out != nil {
			res := rec.Result(report.Run{Test: t.name, Transport: cfg.Transport, Size: size,
				Iterations: cfg.Iters, PingPong: t.kind == pingPong, Elapsed: elapsed})
			if err := out.Write(res); err != nil {
				return err
			}
		}
	}
	if err := ch.barrier(); err != nil {
		return fmt.Errorf("final barrier: %w", err)
	}
	if out != nil {
		return out.Close()
	}
	return nil
}

// runPhase runs one size: the barrier, the warm-up and the measured
// iterations, with the garbage collector off (quietGC). It returns the
// phase's wall time.
func runPhase(s side, ch oob, t *testDef, cfg *config, size int, rec *report.Recorder, initiator bool) (time.Duration, error) {
	defer quietGC()()
	if err := ch.barrier(); err != nil {
		return 0, fmt.Errorf("barrier: %w", err)
	}
	m := s.timer()
	m.rec = nil
	if cfg.Warmup > 0 {
		if err := s.run(size, cfg.Warmup); err != nil {
			return 0, fmt.Errorf("%s size %d warm-up: %w", t.name, size, err)
		}
	}
	rec.Reset()
	r := rec
	if !initiator {
		r = nil
	}
	start := m.start(r, size, cfg.Iters)
	if err := s.run(size, cfg.Iters); err != nil {
		return 0, fmt.Errorf("%s size %d: %w", t.name, size, err)
	}
	elapsed := time.Since(start)
	m.stop()
	return elapsed, nil
}
