package tsc

import (
	"bufio"
	"os"
	"strings"
)

// useTSC says whether the counter is invariant on this machine.
var useTSC = invariantTSC("/proc/cpuinfo")

// Now reads the time-stamp counter (or, without an invariant one, the
// monotonic clock in nanoseconds). It is one call of now, small enough
// to be inlined into a timing loop.
func Now() Ticks { return now() }

// now reads the counter where useTSC is set, else the monotonic clock.
//
//go:noescape
func now() Ticks

// monotonic is called from now's assembly, which the tools that look
// for unused code do not read.
var _ = monotonic

// rdtsc executes RDTSC.
//
//go:noescape
func rdtsc() Ticks

// invariantTSC reports whether the flags of the first processor in the
// cpuinfo file name both constant_tsc and nonstop_tsc.
func invariantTSC(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for s.Scan() {
		key, val, ok := strings.Cut(s.Text(), ":")
		if !ok || strings.TrimSpace(key) != "flags" {
			continue
		}
		var constant, nonstop bool
		for _, fl := range strings.Fields(val) {
			constant = constant || fl == "constant_tsc"
			nonstop = nonstop || fl == "nonstop_tsc"
		}
		return constant && nonstop
	}
	return false
}
