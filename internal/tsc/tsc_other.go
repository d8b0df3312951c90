//go:build !amd64

package tsc

// useTSC is false: only amd64 reads a counter here.
const useTSC = false

// Now reads the monotonic clock in nanoseconds.
func Now() Ticks { return monotonic() }

func rdtsc() Ticks { return monotonic() }
