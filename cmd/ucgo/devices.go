package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/ucp"
	"github.com/ucgo/ucgo/uct"
)

var capNames = []struct {
	c    uct.Cap
	name string
}{
	{uct.CapAMShort, "am_short"}, {uct.CapAMBcopy, "am_bcopy"}, {uct.CapAMZcopy, "am_zcopy"},
	{uct.CapPutShort, "put_short"}, {uct.CapPutBcopy, "put_bcopy"}, {uct.CapPutZcopy, "put_zcopy"},
	{uct.CapGetBcopy, "get_bcopy"}, {uct.CapGetZcopy, "get_zcopy"},
	{uct.CapAtomic32, "atomic32"}, {uct.CapAtomic64, "atomic64"}, {uct.CapPending, "pending"},
	{uct.CapConnectToIface, "connect_to_iface"}, {uct.CapErrHandlePeerFailure, "peer_failure"},
	{uct.CapEventSendComp, "event_send_comp"}, {uct.CapEventRecv, "event_recv"},
	{uct.CapCheckLiveness, "check_liveness"}, {uct.CapSharedMemory, "shared_memory"},
}

func caps(c uct.Cap) string {
	var s []string
	for _, n := range capNames {
		if c.Has(n.c) {
			s = append(s, n.name)
		}
	}
	return strings.Join(s, " ")
}

// size prints a byte count in B, KiB, MiB or GiB when exact.
func size(n int) string {
	for _, u := range []struct {
		s    string
		unit int
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.unit && n%u.unit == 0 {
			return fmt.Sprintf("%d %s", n/u.unit, u.s)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// offered says whether DefaultTransports offers the component.
func offered(name string) bool {
	for _, c := range ucp.DefaultTransports() {
		if c.Name() == name {
			return true
		}
	}
	return false
}

// printDevices lists every built-in transport, whether ucp offers it by
// default here, and for each of its devices the iface's capabilities and
// limits, opening (and closing) one iface per device.
func printDevices(out io.Writer) error {
	for _, comp := range []uct.Component{shm.New(), rc.New(rc.Config{})} {
		fmt.Fprintf(out, "# Transport: %s", comp.Name())
		if !offered(comp.Name()) {
			fmt.Fprintf(out, " (not a default transport here: no netdev other than loopback is up with IPv4; UCGO_TLS=%s still selects it)", comp.Name())
		}
		fmt.Fprintln(out)
		devs, err := comp.Devices()
		if err != nil {
			fmt.Fprintf(out, "#   devices: %v\n", err)
			continue
		}
		if len(devs) == 0 {
			fmt.Fprintln(out, "#   no devices")
		}
		for _, d := range devs {
			fmt.Fprintf(out, "#\n#   Device: %s (%s)\n", d.Name, d.Kind)
			printDevice(out, comp, d.Name)
		}
		fmt.Fprintln(out, "#")
	}
	return nil
}

// printDevice opens a memory domain and an iface on one device (rc: of a
// component configured for that netdev), prints them and closes them.
func printDevice(out io.Writer, comp uct.Component, dev string) {
	if comp.Name() == "rc" {
		comp = rc.New(rc.Config{Device: dev})
	}
	md, err := comp.OpenMD(uct.MDParams{})
	if err != nil {
		fmt.Fprintf(out, "#      memory domain: %v\n", err)
		return
	}
	defer md.Close()
	ma := md.Attr()
	fmt.Fprintf(out, "#      memory domain: register %t, alloc %t, rkey %d B\n", ma.CanRegister, ma.CanAlloc, ma.RKeySize)
	it, err := md.OpenIface(uct.IfaceParams{Device: dev})
	if err != nil {
		fmt.Fprintf(out, "#      cannot open an iface: %v\n", err)
		return
	}
	defer it.Close()
	printIface(out, it)
}

func printIface(out io.Writer, it uct.Iface) {
	a := it.Attr()
	fmt.Fprintf(out, "#      capabilities: %s\n", caps(a.Cap))
	fmt.Fprintf(out, "#      am: short %s, bcopy %s, zcopy %s, zcopy header %s, iov %d\n",
		size(a.AMMaxShort), size(a.AMMaxBcopy), size(a.AMMaxZcopy), size(a.AMMaxHeader), a.AMMaxIOV)
	fmt.Fprintf(out, "#      put: short %s, bcopy %s, zcopy %s\n", size(a.PutMaxShort), size(a.PutMaxBcopy), size(a.PutMaxZcopy))
	fmt.Fprintf(out, "#      get: bcopy %s, zcopy %s\n", size(a.GetMaxBcopy), size(a.GetMaxZcopy))
	var atomics []string
	if a.Cap.Has(uct.CapAtomic32) {
		atomics = append(atomics, "32-bit")
	}
	if a.Cap.Has(uct.CapAtomic64) {
		atomics = append(atomics, "64-bit")
	}
	if len(atomics) == 0 {
		atomics = []string{"none"}
	}
	fmt.Fprintf(out, "#      atomics: %s (add, and, or, xor, swap, cswap; fetching and not)\n", strings.Join(atomics, ", "))
	fmt.Fprintf(out, "#      estimates: latency %v, bandwidth %.0f MB/s, overhead %v\n", a.Latency, a.Bandwidth/1e6, a.Overhead)
	fmt.Fprintf(out, "#      address: %d B\n", a.AddressLen)
	if p, ok := it.(interface{ PortInfo() rc.PortInfo }); ok {
		pi := p.PortInfo()
		fmt.Fprintf(out, "#      link: %v, MTU %v (netdev %d), GID %v\n", pi.Port.State, pi.Port.ActiveMTU, pi.Port.NetMTU, pi.Port.GID)
		share := "own port (not shared)"
		if pi.Shared {
			share = "shared by SK_REUSEPORT"
		} else if pi.ShareErr != nil {
			share = fmt.Sprintf("own port: not shared because %v", pi.ShareErr)
		}
		fmt.Fprintf(out, "#      udp: %v, %s, reuseport slot 0x%02x (QPNs 0x%06x-0x%06x)\n",
			pi.Local, share, pi.QPNFirst>>16, pi.QPNFirst, pi.QPNLast)
	} else {
		fmt.Fprintln(out, "#      link: none (memory)")
	}
}
