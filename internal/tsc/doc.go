// Package tsc reads the processor's time-stamp counter and converts its
// ticks to nanoseconds, for timing loops whose iterations are shorter than
// a call of time.Now is cheap.
//
// On amd64 [Now] is one RDTSC instruction, as UCX's ucs_get_time is. The
// counter's rate is measured once, against Go's monotonic clock, the first
// time [Calibrate] or [Ticks.Duration] is used: the counter and the
// monotonic clock are read together at the start and the end of a
// calibration window (20 ms by default), each counter read bracketed by
// two monotonic reads so that a preemption between them is seen and the
// attempt thrown away, and the median rate of three windows is kept.
//
// The counter is used only where the processor says it is invariant
// (constant_tsc and nonstop_tsc in /proc/cpuinfo): its rate then does not
// change with frequency scaling or sleep states, and the kernel keeps it
// in step across CPUs. Elsewhere, and on other architectures, [Now]
// reads the monotonic clock in nanoseconds and the rate is 1 tick per ns;
// [Source] says which one is in use.
//
// The package owns nothing but its calibration, which is computed once
// and shared by every caller of the process.
package tsc
