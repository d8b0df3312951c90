package uct

import "testing"

// TestDeviceStatusFlags: the status is a set of flags, and every change
// of the set is one event: link down, then RDMA disabled on top of it,
// then link up with RDMA still disabled, then RDMA enabled again.
func TestDeviceStatusFlags(t *testing.T) {
	var d DeviceWatchers
	d.Init("eth0", DeviceUp)
	var got []DeviceStatus
	w, err := d.Register(func(e DeviceStatusEvent) { got = append(got, e.Status) })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	d.SetLink(false)
	d.SetRDMADisabled(true)
	d.SetRDMADisabled(true) // no change, no event
	d.SetLink(true)
	d.SetRDMADisabled(false)
	want := []DeviceStatus{DeviceDown, DeviceDown | DeviceRDMADisabled, DeviceUp | DeviceRDMADisabled, DeviceUp}
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
	for s, usable := range map[DeviceStatus]bool{DeviceUp: true, DeviceDown: false,
		DeviceUp | DeviceRDMADisabled: false, DeviceDown | DeviceRDMADisabled: false} {
		if s.Usable() != usable {
			t.Errorf("%v.Usable() = %v", s, s.Usable())
		}
	}
	if !(DeviceDown | DeviceRDMADisabled).Has(DeviceRDMADisabled) || DeviceDown.Has(DeviceRDMADisabled) {
		t.Error("Has")
	}
}
