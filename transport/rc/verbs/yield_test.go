package verbs

import (
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"
	"time"
)

// TestBusyPollNotPreempted: a goroutine that polls a CQ, or runs a
// device's Progress, without pause for longer than the runtime's
// preemption interval (10 ms) yields the processor on its own (see
// yieldEvery), so the runtime never preempts it. A preemption is a
// SIGURG to the polling thread, which the runtime also passes to
// signal.Notify; without the yield, 200 ms of polling takes one every 10
// to 20 ms. A host so loaded that it takes the polling thread off its
// CPU for 10 ms makes the runtime preempt it all the same: a couple are
// let pass.
func TestBusyPollNotPreempted(t *testing.T) {
	a, _ := pair(t, rigOpts{noWatchdog: true, mtu: MTU4096})
	// A collection preempts goroutines to scan their stacks.
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	urg := make(chan os.Signal, 256)
	signal.Notify(urg, syscall.SIGURG)
	defer signal.Stop(urg)
	wc := make([]WC, 16)
	const poll = 200 * time.Millisecond
	for _, c := range []struct {
		name string
		poll func()
	}{
		{"CQ.Poll", func() { a.cq.Poll(wc) }},
		{"Device.Progress", a.d.Progress},
	} {
		// Signals of what came before (the collection, the setup's
		// goroutines) may still be on their way.
		time.Sleep(20 * time.Millisecond)
		for len(urg) > 0 {
			<-urg
		}
		for end := time.Now().Add(poll); time.Now().Before(end); {
			for range 64 {
				c.poll()
			}
		}
		if n := len(urg); n > 2 {
			t.Errorf("%s: the polling goroutine was preempted %d times in %v", c.name, n, poll)
		}
	}
}
