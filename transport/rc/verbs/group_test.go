package verbs

import (
	"net/netip"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// TestWatchdogLeavesGroupDevice: Poll of a CQ in a progress group marks
// a pass in the group, and while the group is active (here: a pass on a
// sibling device that does not end) a device's watchdog leaves it alone
// until its engine has not run for groupMaxIdle intervals; then it takes
// it over, and each further run again waits that long. The group is held
// active by a pass rather than by a loop that polls the sibling: a loop
// that the OS does not schedule for an interval (a loaded host) leaves the
// group inactive, and the watchdog then takes the device over early, as
// it should. Each run's engine time is checked against the one before
// it, so that neither the scheduling of the watchdog nor of this test
// decides the outcome.
func TestWatchdogLeavesGroupDevice(t *testing.T) {
	const iv = 100 * time.Millisecond
	open := func() (*Device, *CQ) {
		d, err := Open(Config{Addr: netip.MustParseAddr("127.0.0.1"), Port: -1, ProgressInterval: iv})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		cq, err := d.CreateCQ(16, nil)
		if err != nil {
			t.Fatal(err)
		}
		return d, cq
	}
	_, ca := open()
	b, cb := open()
	var g uct.ProgressGroup
	for _, cq := range []*CQ{ca, cb} {
		if err := cq.SetProgressGroup(&g); err != nil {
			t.Fatal(err)
		}
	}
	wc := make([]WC, 16)
	start := uct.GroupClock(time.Now())
	ca.Poll(wc)
	end := uct.GroupClock(time.Now())
	if !g.Active(end, end-start+1) {
		t.Fatal("Poll of a CQ in a group did not mark a pass in it")
	}
	if g.Active(end+int64(time.Hour), 1) {
		t.Fatal("Poll of a CQ in a group left its pass running")
	}

	// The owner is busy on a from now on.
	g.Enter(uct.GroupClock(time.Now()))
	defer g.Leave()
	cb.Poll(wc)
	// snap waits until b's watchdog has run more than after times and
	// returns how often it has and when b's engine last ran, both taken
	// under the engine lock.
	snap := func(after uint64) (uint64, int64) {
		for deadline := time.Now().Add(testTimeout); ; time.Sleep(time.Millisecond) {
			b.mu.Lock()
			runs, last := b.ctr.WatchdogRuns, b.lastProg.Load()
			b.mu.Unlock()
			if runs > after {
				return runs, last
			}
			if time.Now().After(deadline) {
				t.Fatalf("b left alone for %v, %d watchdog intervals: its watchdog never ran", testTimeout, testTimeout/iv)
			}
		}
	}
	// A run of b's watchdog may come before the pass on a has started,
	// or act on a look it took before: the first one seen is only the
	// point from which the others are timed. From it on nothing but the
	// watchdog runs b's engine.
	runs1, last1 := snap(0)
	runs2, last2 := snap(runs1)
	if idle := time.Duration(last2 - last1); idle < time.Duration(runs2-runs1)*groupMaxIdle*iv {
		t.Fatalf("b's watchdog ran %d times within %v while a pass on a, b's sibling, ran; want one at most every %v", runs2-runs1, idle, groupMaxIdle*iv)
	}
}

// TestProgressGroupDropped: a CQ's group stops holding the watchdog back
// once the CQ is closed or leaves the group.
func TestProgressGroupDropped(t *testing.T) {
	d, err := Open(Config{Addr: netip.MustParseAddr("127.0.0.1"), Port: -1, ProgressInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var g uct.ProgressGroup
	g.Enter(uct.GroupClock(time.Now())) // a pass that never ends
	cq1, _ := d.CreateCQ(4, nil)
	cq2, _ := d.CreateCQ(4, nil)
	for _, cq := range []*CQ{cq1, cq2} {
		if err := cq.SetProgressGroup(&g); err != nil {
			t.Fatal(err)
		}
	}
	if !d.ownerBusy(d.now(), 0) {
		t.Fatal("two CQs in an active group: the owner is not busy")
	}
	if err := cq1.Close(); err != nil {
		t.Fatal(err)
	}
	if !d.ownerBusy(d.now(), 0) {
		t.Fatal("one CQ left in an active group: the owner is not busy")
	}
	if err := cq2.SetProgressGroup(nil); err != nil {
		t.Fatal(err)
	}
	if d.ownerBusy(d.now(), 0) {
		t.Fatal("no CQ in the group: the owner is busy")
	}
	if err := cq1.SetProgressGroup(&g); err == nil {
		t.Fatal("a closed CQ joined a group")
	}
}
