package uctkit_test

import (
	"fmt"

	"github.com/ucgo/ucgo/uct"
	"github.com/ucgo/ucgo/uct/uctkit"
)

func ExampleNotifier() {
	var n uctkit.Notifier
	h := func(arg any, c uct.CompletionInfo, err error) { fmt.Println(arg, c.Queue, err) }
	n.Notify(h, "first")                                   // no completion yet: queued
	n.Completed(uct.CompletionInfo{Queue: uct.NotifyRecv}) // one completion runs one handler
	n.Completed(uct.CompletionInfo{Queue: uct.NotifySend}) // no handler waits: remembered
	n.Completed(uct.CompletionInfo{Queue: uct.NotifyRecv}) // remembered after it
	n.Notify(h, "second")                                  // runs now, with the oldest
	n.Notify(h, "third")                                   // runs now, with the next
	n.Notify(h, "fourth")                                  // nothing waits: queued
	n.Cancel()                                             // closing cancels the rest
	// Output:
	// first recv <nil>
	// second send <nil>
	// third recv <nil>
	// fourth queue(0) request canceled
}

func ExampleDeviceWatchers() {
	var d uctkit.DeviceWatchers
	d.Init("eth0", uct.DeviceUp)
	w, _ := d.Register(func(e uct.DeviceStatusEvent) { fmt.Println(e.Device, e.Status) })
	d.Set(uct.DeviceDown)
	d.Set(uct.DeviceRDMADisabled)
	w.Close()
	d.Set(uct.DeviceUp) // not delivered
	// Output:
	// eth0 down
	// eth0 rdma-disabled
}

func ExampleErrorHandlerSlot() {
	var s uctkit.ErrorHandlerSlot
	s.Set(func(arg any, ep uct.Endpoint, err error) { fmt.Println(arg, err) }, "rank 3")
	s.Call(nil, uct.ErrPeerFailed)
	// Output: rank 3 peer process failed
}
