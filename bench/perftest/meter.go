package main

import (
	"fmt"
	"io"
	"time"

	"github.com/ucgo/ucgo/bench/perftest/internal/report"
	"github.com/ucgo/ucgo/internal/tsc"
)

// meter times the measured iterations of one size on the initiator.
// Everything it touches in mark is allocated before the measured loop.
//
// mark reads the processor's time-stamp counter once per iteration, as
// ucx_perftest does through ucs_get_time: one RDTSC, about 12 ns here,
// where time.Since costs 40-70 ns on a virtual machine, all of it inside
// the measured ping-pong. The counter's rate is calibrated against the
// monotonic clock once per process (internal/tsc); without an invariant
// counter, tsc falls back to the monotonic clock.
type meter struct {
	rec      *report.Recorder // nil: not measuring (warm-up, responder)
	conv     tsc.Converter
	base     tsc.Ticks     // start of the measured phase
	prev     time.Duration // since base, at the previous mark
	progress io.Writer     // live progress line; nil: off
	lastTick time.Duration // since base, at the last progress line
	tickIter int           // iterations done at lastTick
	size     int
	iters    int
	pingPong bool
}

// start begins a measured phase of iters iterations of size bytes. It
// returns the monotonic start time, which times the phase as a whole.
func (m *meter) start(rec *report.Recorder, size, iters int) time.Time {
	m.rec, m.size, m.iters = rec, size, iters
	now := time.Now()
	m.base = tsc.Now()
	m.prev, m.lastTick, m.tickIter = 0, 0, 0
	return now
}

// calibrate calibrates the counter (once per process) for the meter; the
// side calls it when it is made, before any barrier.
func (m *meter) calibrate() { m.conv = tsc.NewConverter() }

// mark records iteration i of the measured phase.
func (m *meter) mark(i int) {
	if m.rec == nil {
		return
	}
	now := m.conv.Duration(tsc.Now() - m.base)
	m.rec.Add(now - m.prev)
	m.prev = now
	if m.progress != nil && now-m.lastTick >= time.Second {
		// the average iteration since the last line
		ns := float64((now - m.lastTick).Nanoseconds()) / float64(i+1-m.tickIter)
		m.lastTick, m.tickIter = now, i+1
		fmt.Fprintf(m.progress, "\r%s\x1b[K", report.Progress(m.size, i+1, m.iters, ns, m.pingPong))
	}
}
