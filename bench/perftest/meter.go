package main

import (
	"fmt"
	"io"
	"math"
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
// the measured ping-pong. Like ucx_perftest's timing queue, it keeps the
// raw difference of two counter reads and converts nothing per
// iteration: stop turns the phase's samples into nanoseconds at once.
// The counter's rate is calibrated against the monotonic clock once per
// process (internal/tsc); without an invariant counter, tsc falls back
// to the monotonic clock.
type meter struct {
	rec  *report.Recorder // nil: not measuring (warm-up, responder)
	conv tsc.Converter
	prev tsc.Ticks // counter at the previous mark (at the start for the first)
	// fast is the recorder's sample memory (report.Recorder.Direct) that
	// stamp writes iteration pos into; it is nil where the recorder keeps
	// every k-th iteration, whose samples stamp keeps in batch instead,
	// and when not measuring.
	fast     []uint32
	batch    [markBatch]uint32
	pos      int
	second   tsc.Ticks // one second of ticks, the progress line's period
	progress io.Writer // live progress line; nil: off
	lastTick tsc.Ticks // counter at the last progress line
	tickIter int       // iterations done at lastTick
	size     int
	iters    int
	pingPong bool
}

// start begins a measured phase of iters iterations of size bytes. It
// returns the monotonic start time, which times the phase as a whole.
func (m *meter) start(rec *report.Recorder, size, iters int) time.Time {
	m.rec, m.size, m.iters = rec, size, iters
	m.fast, m.pos = nil, 0
	if rec != nil {
		m.fast = rec.Direct()
	}
	m.second = m.conv.Ticks(time.Second)
	now := time.Now()
	m.prev = tsc.Now()
	m.lastTick, m.tickIter = m.prev, 0
	return now
}

// stop ends the measured phase: the samples mark recorded as counter
// ticks become nanoseconds.
func (m *meter) stop() {
	if m.rec != nil {
		if m.fast != nil {
			m.rec.Commit(m.pos)
		} else {
			m.keepBatch()
		}
		m.rec.Scale(m.conv.NsPerTick())
	}
	m.fast, m.pos = nil, 0
}

// calibrate calibrates the counter (once per process) for the meter; the
// side calls it when it is made, before any barrier.
func (m *meter) calibrate() { m.conv = tsc.NewConverter() }

// markBatch is how many iterations stamp records between two calls of
// lap (a power of two).
const markBatch = 256

// mark records iteration i of the measured phase.
func (m *meter) mark(i int) {
	if m.rec == nil {
		return
	}
	now := tsc.Now()
	if m.stamp(now) {
		m.lap(i, now)
	}
}

// stamp is the part of mark a timing loop runs inline after reading the
// counter (now := tsc.Now(); if m.stamp(now) { m.lap(i, now) }), as
// ucx_perftest's ucx_perf_update is inlined into its loops: it stores
// the iteration's count of ticks, saturated at 2^32-1, into the
// recorder's memory (or the batch) and says whether lap must run, once
// every markBatch iterations. It makes no call, so that it is inlined
// and the loop keeps its registers.
func (m *meter) stamp(now tsc.Ticks) bool {
	d := uint64(now - m.prev)
	m.prev = now
	c := uint32(min(d, math.MaxUint32))
	if m.pos < len(m.fast) {
		m.fast[m.pos] = c
	} else {
		m.batch[m.pos&(markBatch-1)] = c
	}
	m.pos++
	return m.pos&(markBatch-1) == 0
}

// lap is the out-of-line part of mark, run after every markBatch-th
// iteration: a recorder that keeps every k-th iteration gets the batch's
// counts, and the live progress line is printed once a second.
func (m *meter) lap(i int, now tsc.Ticks) {
	if m.fast == nil {
		m.keepBatch()
	}
	if m.progress != nil && now-m.lastTick >= m.second {
		m.tick(i, now)
	}
}

// keepBatch hands the counts stamp stored in the batch since the last
// lap to the recorder (to none when not measuring).
func (m *meter) keepBatch() {
	n := m.pos & (markBatch - 1)
	if n == 0 && m.pos > 0 {
		n = markBatch
	}
	if m.rec != nil {
		for _, c := range m.batch[:n] {
			m.rec.AddCount(uint64(c))
		}
	}
	m.pos = 0
}

// tick prints the live progress line: the average iteration since the
// last line.
func (m *meter) tick(i int, now tsc.Ticks) {
	ns := float64(m.conv.Duration(now-m.lastTick).Nanoseconds()) / float64(i+1-m.tickIter)
	m.lastTick, m.tickIter = now, i+1
	fmt.Fprintf(m.progress, "\r%s\x1b[K", report.Progress(m.size, i+1, m.iters, ns, m.pingPong))
}
