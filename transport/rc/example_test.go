package rc_test

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/uct"
)

// freePort returns a UDP port of 127.0.0.1 that was free a moment ago.
func freePort() int {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// Two rc devices on 127.0.0.1 (each on its own UDP port): B receives an
// active message and A writes into B's memory with RDMA.
func Example() {
	lo := netip.MustParseAddr("127.0.0.1")
	open := func() (uct.MD, uct.Iface) {
		md, err := rc.New(rc.Config{Device: "lo", Addr: lo, Port: freePort()}).OpenMD(uct.MDParams{})
		if err != nil {
			panic(err)
		}
		it, err := md.OpenIface(uct.IfaceParams{})
		if err != nil {
			panic(err)
		}
		return md, it
	}
	mdA, a := open()
	mdB, b := open()
	defer mdA.Close()
	defer mdB.Close()
	defer a.Close()
	defer b.Close()

	got := ""
	b.SetAMHandler(7, func(_ any, data []byte, _ uct.AMFlags) { got = string(data) }, nil)
	ep, err := a.Connect(b.Address(), uct.EPParams{})
	if err != nil {
		panic(err)
	}
	defer ep.Close()
	if _, err := ep.AMBcopy(7, []byte("hello "), []byte("rc")); err != nil {
		panic(err)
	}
	for got == "" {
		a.Progress()
		b.Progress()
	}
	fmt.Println(got)

	mem, err := mdB.Alloc(64, uct.AccessAll)
	if err != nil {
		panic(err)
	}
	defer mem.Close()
	rk, err := mdA.UnpackRKey(mem.PackRKey())
	if err != nil {
		panic(err)
	}
	done := false
	c := &uct.Completion{Count: 1, Func: func(*uct.Completion) { done = true }}
	if err := ep.PutZcopy([][]byte{[]byte("written by RDMA")}, mem.Address(), rk, c); err != uct.ErrInProgress {
		panic(err)
	}
	for !done {
		a.Progress()
		b.Progress()
	}
	fmt.Println(c.Status, string(mem.Bytes()[:15]))
	// Output:
	// hello rc
	// <nil> written by RDMA
}
