package cpupin

import (
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// maxPasses bounds the reads of the thread list (see Process).
const maxPasses = 100

// Process confines every thread of the process to cpu and sets
// GOMAXPROCS to 1. The calling goroutine is not locked to its thread:
// with one P, a goroutine the runtime preempts goes on at once on its own
// thread instead of handing its P between threads. A cpu outside
// [0, runtime.NumCPU()) changes nothing. restore gives every thread it
// pinned its former mask back, and GOMAXPROCS its former value.
//
// A thread started while the list of threads is read inherits its
// parent's mask, which may not be set yet, so the list is read again
// until a pass finds no new thread (at most maxPasses passes: a process
// has few threads).
func Process(cpu int) (restore func()) {
	if cpu < 0 || cpu >= runtime.NumCPU() {
		return func() {}
	}
	var set unix.CPUSet
	set.Set(cpu)
	procs := runtime.GOMAXPROCS(1)
	old := map[int]unix.CPUSet{}
	for more, pass := true, 0; more && pass < maxPasses; pass++ {
		more = false
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			var m unix.CPUSet
			if unix.SchedGetaffinity(0, &m) == nil && unix.SchedSetaffinity(0, &set) == nil {
				old[0] = m
			}
			break
		}
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if _, done := old[tid]; err != nil || done {
				continue
			}
			var m unix.CPUSet
			if unix.SchedGetaffinity(tid, &m) != nil {
				continue
			}
			old[tid], more = m, true
			_ = unix.SchedSetaffinity(tid, &set)
		}
	}
	return func() {
		for tid, m := range old {
			_ = unix.SchedSetaffinity(tid, &m)
		}
		runtime.GOMAXPROCS(procs)
	}
}
