package cpupin

import (
	"os"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// masks reads the affinity of every thread of the process.
func masks(t *testing.T) map[int]unix.CPUSet {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skipf("no /proc/self/task: %v", err)
	}
	out := map[int]unix.CPUSet{}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var m unix.CPUSet
		if unix.SchedGetaffinity(tid, &m) == nil {
			out[tid] = m
		}
	}
	return out
}

// TestProcess: every thread of the process runs on the one CPU given,
// with GOMAXPROCS 1, until restore gives each its former mask and
// GOMAXPROCS its former value back.
func TestProcess(t *testing.T) {
	before := masks(t)
	procs := runtime.GOMAXPROCS(0)
	cpu := runtime.NumCPU() - 1
	restore := Process(cpu)
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("GOMAXPROCS %d while pinned, want 1", n)
	}
	for tid, m := range masks(t) {
		if m.Count() != 1 || !m.IsSet(cpu) {
			t.Errorf("thread %d may run on %d CPUs (CPU %d: %v) while pinned, want CPU %d only", tid, m.Count(), cpu, m.IsSet(cpu), cpu)
		}
	}
	restore()
	if n := runtime.GOMAXPROCS(0); n != procs {
		t.Errorf("GOMAXPROCS %d after restore, want %d", n, procs)
	}
	after := masks(t)
	for tid, m := range before {
		if a, ok := after[tid]; ok && a != m {
			t.Errorf("thread %d: mask %v after restore, want %v", tid, a, m)
		}
	}
}

// TestProcessOutOfRange: a CPU the machine does not have changes nothing.
func TestProcessOutOfRange(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	before := masks(t)
	for _, cpu := range []int{-1, runtime.NumCPU()} {
		restore := Process(cpu)
		if n := runtime.GOMAXPROCS(0); n != procs {
			t.Errorf("Process(%d): GOMAXPROCS %d, want %d", cpu, n, procs)
		}
		for tid, m := range masks(t) {
			if b, ok := before[tid]; ok && b != m {
				t.Errorf("Process(%d): thread %d mask %v, want %v", cpu, tid, m, b)
			}
		}
		restore()
	}
}
