package rc

import (
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// TestIfaceProgressGroup: an iface opened with IfaceParams.Group marks
// the group with every Progress (the device's watchdog reads it), and
// one opened without leaves it alone.
func TestIfaceProgressGroup(t *testing.T) {
	md := openLoopMD(t)
	t.Cleanup(func() { md.Close() })
	var g uct.ProgressGroup
	it, err := md.OpenIface(uct.IfaceParams{Group: &g})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { it.Close() })
	plain := openLoopIface(t, md)
	t.Cleanup(func() { plain.Close() })
	plain.Progress()
	if g.Active(uct.GroupClock(time.Now()), int64(time.Hour)) {
		t.Fatal("the group is marked by an iface outside it")
	}
	it.Progress()
	if !g.Active(uct.GroupClock(time.Now()), int64(time.Hour)) {
		t.Fatal("Progress of an iface in a group did not mark the group")
	}
}
