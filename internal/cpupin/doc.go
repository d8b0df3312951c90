// Package cpupin confines a whole process to one CPU, as benchmarks
// that measure two processes against each other need: every thread of
// the process, the Go runtime's own included, and GOMAXPROCS 1, so that
// the runtime's threads take their time from this process's CPU and not
// from its peer's. The caller owns the process's affinity until it calls
// the restore function it was given.
package cpupin
