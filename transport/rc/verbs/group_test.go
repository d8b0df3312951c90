package verbs

import (
	"net/netip"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// TestWatchdogLeavesGroupDevice: one loop polls the CQs of devices a and
// b as one progress group, but for a while only a's. b's watchdog does
// not take b over while the group is active; once b has been left alone
// for groupMaxIdle intervals it does, and once the loop stops polling at
// all, a's watchdog takes a over.
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
	a, ca := open()
	b, cb := open()
	var g uct.ProgressGroup
	for _, cq := range []*CQ{ca, cb} {
		if err := cq.SetProgressGroup(&g); err != nil {
			t.Fatal(err)
		}
	}
	wc := make([]WC, 16)
	cb.Poll(wc)
	// Half of groupMaxIdle intervals: without the group b's watchdog
	// fires after one.
	for end := time.Now().Add(groupMaxIdle / 2 * iv); time.Now().Before(end); {
		ca.Poll(wc)
	}
	if n := b.Counters().WatchdogRuns; n != 0 {
		t.Fatalf("b's watchdog ran %d times while its owner polled a, b's sibling", n)
	}
	for deadline := time.Now().Add(testTimeout); b.Counters().WatchdogRuns == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("b left alone for %v, %d watchdog intervals: its watchdog never ran", testTimeout, testTimeout/iv)
		}
		ca.Poll(wc)
	}
	for deadline := time.Now().Add(testTimeout); a.Counters().WatchdogRuns == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("nobody polled a for %v: its watchdog never ran", testTimeout)
		}
		time.Sleep(time.Millisecond)
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
