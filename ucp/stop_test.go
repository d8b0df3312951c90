package ucp

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// stopChild sends SIGSTOP to rank r's process and waits until every one of
// its threads is stopped. kill returns before that: the kernel wakes one
// thread to take the signal, and until it runs and stops the others, they
// keep running (a loaded machine can take milliseconds), so a test that
// posts right after the signal could still be answered. It registers a
// SIGCONT for the end of the test.
func (nd *node) stopChild(r int) {
	nd.t.Helper()
	p := nd.procs[r].Process
	nd.must(p.Signal(syscall.SIGSTOP))
	nd.t.Cleanup(func() { p.Signal(syscall.SIGCONT) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		running, err := runningThreads(p.Pid)
		if err != nil {
			nd.t.Fatalf("stopping rank %d: %v", r, err)
		}
		if running == 0 {
			return
		}
		if time.Now().After(deadline) {
			nd.t.Fatalf("rank %d: %d threads still not stopped 10 s after SIGSTOP", r, running)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// runningThreads counts the threads of pid that are not in the stopped
// state (T) according to /proc.
func runningThreads(pid int) (int, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("threads of %d: %v", pid, err)
	}
	n := 0
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread exited
		}
		// pid (comm) S ...: the state follows the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			return 0, fmt.Errorf("%s: %q", f, b)
		}
		if b[i+2] != 'T' {
			n++
		}
	}
	return n, nil
}
