package main

import (
	"fmt"
	"io"
	"time"

	"github.com/ucgo/ucgo/bench/perftest/internal/report"
)

// meter times the measured iterations of one size on the initiator.
// Everything it touches in mark is allocated before the measured loop.
//
// mark reads the clock once per iteration with time.Since, which reads
// only the monotonic clock; time.Now also reads the wall clock, and on a
// virtual machine (kvm-clock) each read is tens of nanoseconds spent
// inside the measured ping-pong. ucx_perftest reads a cycle counter.
type meter struct {
	rec      *report.Recorder // nil: not measuring (warm-up, responder)
	base     time.Time        // start of the measured phase
	prev     time.Duration    // since base, at the previous mark
	progress io.Writer        // live progress line; nil: off
	lastTick time.Duration    // since base, at the last progress line
	tickIter int              // iterations done at lastTick
	size     int
	iters    int
	pingPong bool
}

// start begins a measured phase of iters iterations of size bytes.
func (m *meter) start(rec *report.Recorder, size, iters int) time.Time {
	m.rec, m.size, m.iters = rec, size, iters
	m.base = time.Now()
	m.prev, m.lastTick, m.tickIter = 0, 0, 0
	return m.base
}

// mark records iteration i of the measured phase.
func (m *meter) mark(i int) {
	if m.rec == nil {
		return
	}
	now := time.Since(m.base)
	m.rec.Add(now - m.prev)
	m.prev = now
	if m.progress != nil && now-m.lastTick >= time.Second {
		// the average iteration since the last line
		ns := float64((now - m.lastTick).Nanoseconds()) / float64(i+1-m.tickIter)
		m.lastTick, m.tickIter = now, i+1
		fmt.Fprintf(m.progress, "\r%s\x1b[K", report.Progress(m.size, i+1, m.iters, ns, m.pingPong))
	}
}
