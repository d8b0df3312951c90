package netns_test

import (
	"net"
	"net/netip"
	"testing"

	"github.com/ucgo/ucgo/internal/netns"
)

// A network test builds a pair, opens sockets inside each namespace with
// Do and cuts the link with SetLink.
func ExampleNewPair() {
	test := func(t *testing.T) {
		p, err := netns.NewPair(t) // skips unless root; cleaned up by t.Cleanup
		if err != nil {
			t.Fatal(err)
		}
		var srv *net.UDPConn
		err = p.B.Do(func() (err error) {
			srv, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.B.Addr(), 4791)))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		// ... talk to srv from a socket made in p.A.Do, then:
		if err := p.A.SetLink(false); err != nil {
			t.Fatal(err)
		}
	}
	_ = test
}
