package reuseport_test

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/ucgo/ucgo/internal/reuseport"
)

// A RoCEv2 provider shares port 4791 with other processes and allocates
// its QPNs from its slot; without eBPF it falls back to a port of its own.
func ExampleListen() {
	m, err := reuseport.Listen(netip.MustParseAddrPort("192.0.2.10:4791"))
	if errors.Is(err, reuseport.ErrUnavailable) {
		// ... listen on 192.0.2.10:0 and advertise that port ...
		return
	}
	if err != nil {
		return
	}
	defer m.Close()
	first, last := m.QPNRange()
	fmt.Printf("slot %d owns QPNs %#06x..%#06x\n", m.Slot(), first, last)
	// ... read RoCEv2 packets from m.FD() (recvmmsg) or m.Conn() ...
}
