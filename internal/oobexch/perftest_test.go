package oobexch

import (
	"net"
	"net/netip"
	"testing"
)

// Both roles of the perftest handshake against each other over a socket
// pair: each side gets the other's values.
func TestPerftestSessionLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cli := &PerftestSession{RW: a, Client: true}
	srv := &PerftestSession{RW: b}
	ck := PerftestKey{OutReads: 16, QPN: 0x33, PSN: 7, RKey: 0x100, VAddr: 0x7f0000001000, GID: GIDFromAddr(netip.MustParseAddr("10.77.0.1"))}
	sk := PerftestKey{OutReads: 16, QPN: 0x11, PSN: 9, RKey: 0x200, VAddr: 0x55000000, GID: GIDFromAddr(netip.MustParseAddr("10.77.0.2"))}
	type res struct {
		ver       string
		cyc, line int32
		mtu       int
		key       PerftestKey
		rep       BWReport
		err       error
	}
	run := func(s *PerftestSession, ver string, cyc int32, mtu int, k PerftestKey, rep BWReport, out chan<- res) {
		var r res
		defer func() { out <- r }()
		if r.err = s.ExchangeVersions(ver); r.err != nil {
			return
		}
		r.ver = s.RemoteVersion
		if r.cyc, r.line, r.err = s.SysData(cyc, 64); r.err != nil {
			return
		}
		if r.mtu, r.err = s.MTU(mtu); r.err != nil {
			return
		}
		if r.key, r.err = s.HandShake(k); r.err != nil {
			return
		}
		if r.rep, r.err = s.ExchangeBWReports(rep); r.err != nil {
			return
		}
		r.err = s.Close(k) // the peer's "done" stays unread, as in perftest
	}
	cr, sr := make(chan res, 1), make(chan res, 1)
	go run(cli, "5.70", 4096, 5, ck, BWReport{Size: 65536, Iters: 5000, BWAvg: 1.5}, cr)
	go run(srv, "6.10", 8192, 3, sk, BWReport{}, sr)
	c, s := <-cr, <-sr
	if c.err != nil || s.err != nil {
		t.Fatalf("client %v, server %v", c.err, s.err)
	}
	if c.ver != "6.10" || s.ver != "5.70" {
		t.Errorf("versions: client saw %q, server saw %q", c.ver, s.ver)
	}
	if c.cyc != 8192 || s.cyc != 8192 || c.line != 64 {
		t.Errorf("sys data: %d %d %d", c.cyc, s.cyc, c.line)
	}
	if c.mtu != 3 || s.mtu != 3 {
		t.Errorf("MTU: client %d server %d, want the smaller, 3", c.mtu, s.mtu)
	}
	if c.key != sk || s.key != ck {
		t.Errorf("keys: client got %v, server got %v", c.key, s.key)
	}
	if s.rep.Size != 65536 || s.rep.Iters != 5000 || s.rep.BWAvg != 1.5 {
		t.Errorf("server got report %+v", s.rep)
	}
}
