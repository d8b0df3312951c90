package uct

import (
	"fmt"
	"testing"
	"time"
)

// TestProgressGroupActive: a group is active while a pass runs and for
// within ns after one started, and never before its first pass.
func TestProgressGroupActive(t *testing.T) {
	var g ProgressGroup
	now := GroupClock(time.Now())
	if g.Active(now, int64(time.Hour)) {
		t.Fatal("a group that never ran a pass is active")
	}
	g.Enter(now)
	if !g.Active(now+int64(2*time.Hour), int64(time.Millisecond)) {
		t.Fatal("a running pass does not make the group active")
	}
	g.Leave()
	if !g.Active(now+int64(time.Millisecond), int64(2*time.Millisecond)) {
		t.Fatal("a pass started 1 ms ago, within 2 ms: not active")
	}
	if g.Active(now+int64(3*time.Millisecond), int64(2*time.Millisecond)) {
		t.Fatal("a pass started 3 ms ago, within 2 ms: active")
	}
}

func ExampleProgressGroup() {
	// A loop that drives several ifaces passes one group to each of them
	// (IfaceParams.Group); a transport marks every pass of the loop.
	var g ProgressGroup
	start := GroupClock(time.Now())
	g.Enter(start)
	// ... the pass on one iface ...
	g.Leave()
	fmt.Println(g.Active(start+int64(time.Millisecond), int64(2*time.Millisecond)))
	// Output: true
}
