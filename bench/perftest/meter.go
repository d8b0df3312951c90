package main

import (
	"fmt"
	"io"
	"time"

	"github.com/ucgo/ucgo/bench/perftest/internal/report"
)

// meter times the measured iterations of one size on the initiator.
// Everything it touches in mark is allocated before the measured loop.
type meter struct {
	rec      *report.Recorder // nil: not measuring (warm-up, responder)
	prev     time.Time
	progress io.Writer // live progress line; nil: off
	lastTick time.Time
	tickIter int // iterations done at lastTick
	size     int
	iters    int
	pingPong bool
}

// start begins a measured phase of iters iterations of size bytes.
func (m *meter) start(rec *report.Recorder, size, iters int) time.Time {
	m.rec, m.size, m.iters = rec, size, iters
	now := time.Now()
	m.prev, m.lastTick, m.tickIter = now, now, 0
	return now
}

// mark records iteration i of the measured phase.
func (m *meter) mark(i int) {
	if m.rec == nil {
		return
	}
	now := time.Now()
	d := now.Sub(m.prev)
	m.rec.Add(d)
	m.prev = now
	if m.progress != nil && now.Sub(m.lastTick) >= time.Second {
		// the average iteration since the last line
		ns := float64(now.Sub(m.lastTick).Nanoseconds()) / float64(i+1-m.tickIter)
		m.lastTick, m.tickIter = now, i+1
		fmt.Fprintf(m.progress, "\r%s\x1b[K", report.Progress(m.size, i+1, m.iters, ns, m.pingPong))
	}
}
