package ucp_test

import (
	"fmt"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/ucp"
)

// Rails and standby lanes: NetDevices puts rc on the named netdevs (one
// iface each; UCGO_NET_DEVICES=eth0,eth1 or "all" does the same), and
// with failover to any transport two workers of one host keep an rc lane
// standing by beside shm. Endpoints between hosts with several NICs get
// one rc lane per pair of NICs sharing a subnet, and stripe large
// transfers over up to MaxRndvRails of them.
func ExampleConfig_netDevices() {
	pol := failover.DefaultPolicy()
	pol.Mode = failover.AnyTransport
	uc, err := ucp.NewContext(ucp.Config{NetDevices: []string{"lo"}, Failover: pol, MaxRndvRails: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer uc.Close()
	for _, c := range uc.Config().Transports {
		fmt.Println("transport:", c.Name())
	}
	w, err := uc.NewWorker()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	lanes, err := w.LanesTo(w.Address())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range lanes {
		fmt.Println("lane:", l.Transport, "on", l.Device, "standby:", l.Standby)
	}
	// Output:
	// transport: shm
	// transport: rc
	// lane: shm on memory standby: false
	// lane: rc on lo standby: true
}
