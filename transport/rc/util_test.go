package rc

import (
	"net"
	"net/netip"
	"testing"

	"github.com/ucgo/ucgo/uct"
	"github.com/ucgo/ucgo/uct/ucttest"
)

var loopback = netip.MustParseAddr("127.0.0.1")

// openLoopMD opens an MD on 127.0.0.1 with a free UDP port (so several
// MDs of one process can talk without the SK_REUSEPORT program of 4791).
// The device has no background progress: the tests drive both sides, and
// a background pass executing a retransmitted put or atomic into memory
// the test is touching is a race the race detector cannot see ordered
// by the UDP socket.
func openLoopMD(t testing.TB) *MD {
	t.Helper()
	var last error
	for i := 0; i < 10; i++ {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		port := c.LocalAddr().(*net.UDPAddr).Port
		c.Close()
		md, err := New(Config{Device: "lo", Addr: loopback, Port: port, ProgressInterval: -1}).OpenMD(uct.MDParams{})
		if err == nil {
			return md.(*MD)
		}
		last = err
	}
	t.Fatalf("open MD on 127.0.0.1: %v", last)
	return nil
}

func openLoopIface(t testing.TB, md *MD) *Iface {
	t.Helper()
	it, err := md.OpenIface(uct.IfaceParams{})
	if err != nil {
		t.Fatalf("open iface: %v", err)
	}
	return it.(*Iface)
}

// openLoopIfaces opens two MDs (two devices on two UDP ports of
// 127.0.0.1) and an iface on each, all closed when the test ends.
func openLoopIfaces(t testing.TB) (mda, mdb *MD, a, b *Iface) {
	t.Helper()
	mda, mdb = openLoopMD(t), openLoopMD(t)
	t.Cleanup(func() { mda.Close() })
	t.Cleanup(func() { mdb.Close() })
	a, b = openLoopIface(t, mda), openLoopIface(t, mdb)
	t.Cleanup(func() { a.Close() })
	t.Cleanup(func() { b.Close() })
	return mda, mdb, a, b
}

// loopPair is the ucttest factory: two MDs (two devices on two UDP ports
// of 127.0.0.1), one iface each.
func loopPair(t testing.TB) *ucttest.Pair {
	mda, mdb := openLoopMD(t), openLoopMD(t)
	a, b := openLoopIface(t, mda), openLoopIface(t, mdb)
	return &ucttest.Pair{A: a, B: b, MDA: mda, MDB: mdb, Cleanup: func() {
		a.Close()
		b.Close()
		mda.Close()
		mdb.Close()
	}}
}
