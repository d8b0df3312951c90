package uctkit

import (
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// TestDeviceStatusFlags: the status is a set of flags, and every change
// of the set is one event: link down, then RDMA disabled on top of it,
// then link up with RDMA still disabled, then RDMA enabled again.
func TestDeviceStatusFlags(t *testing.T) {
	var d DeviceWatchers
	d.Init("eth0", uct.DeviceUp)
	var got []uct.DeviceStatus
	w, err := d.Register(func(e uct.DeviceStatusEvent) { got = append(got, e.Status) })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	d.SetLink(false)
	d.SetRDMADisabled(true)
	d.SetRDMADisabled(true) // no change, no event
	d.SetLink(true)
	d.SetRDMADisabled(false)
	want := []uct.DeviceStatus{uct.DeviceDown, uct.DeviceDown | uct.DeviceRDMADisabled, uct.DeviceUp | uct.DeviceRDMADisabled, uct.DeviceUp}
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
	for s, usable := range map[uct.DeviceStatus]bool{uct.DeviceUp: true, uct.DeviceDown: false,
		uct.DeviceUp | uct.DeviceRDMADisabled: false, uct.DeviceDown | uct.DeviceRDMADisabled: false} {
		if s.Usable() != usable {
			t.Errorf("%v.Usable() = %v", s, s.Usable())
		}
	}
	if !(uct.DeviceDown | uct.DeviceRDMADisabled).Has(uct.DeviceRDMADisabled) || uct.DeviceDown.Has(uct.DeviceRDMADisabled) {
		t.Error("Has")
	}
}
