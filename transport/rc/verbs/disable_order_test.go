package verbs

import (
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// TestDisableStatusBeforeFlush: disabling RDMA changes the device's
// status before it flushes any work, so that whoever polls a flushed
// completion and asks the device why finds it disabled. The watcher,
// called as the status changes, still sees the QP in RTS; once
// SetRDMADisabled returns, the QP is in ERR.
func TestDisableStatusBeforeFlush(t *testing.T) {
	a, _ := pair(t, rigOpts{})
	var seen []QPState
	w, err := a.d.Watchers.Register(func(ev uct.DeviceStatusEvent) {
		if ev.Status&uct.DeviceRDMADisabled != 0 {
			seen = append(seen, a.qp.State())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := a.d.SetRDMADisabled(true); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != QPSRTS {
		t.Fatalf("QP states seen as the device was disabled: %v, want one, RTS", seen)
	}
	if st := a.qp.State(); st != QPSErr {
		t.Fatalf("QP state after disabling: %v, want ERR", st)
	}
	if a.d.Watchers.Status().Usable() {
		t.Fatal("the device's status is usable after disabling")
	}
	if err := a.d.SetRDMADisabled(false); err != nil {
		t.Fatal(err)
	}
	if !a.d.Watchers.Status().Usable() {
		t.Fatal("the device's status is not usable after enabling")
	}
}
