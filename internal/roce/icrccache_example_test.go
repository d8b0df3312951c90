package roce_test

import (
	"fmt"
	"net/netip"

	"github.com/ucgo/ucgo/internal/roce"
)

// A sender keeps one ICRCCache for the packets it builds: packets to the
// peer it served last skip most of the pseudo-header's CRC. The bytes
// are those roce.AppendIPID builds.
func ExampleICRCCache() {
	src := netip.MustParseAddrPort("10.0.0.1:4791")
	dst := netip.MustParseAddrPort("10.0.0.2:4791")
	var c roce.ICRCCache
	for psn := uint32(0); psn < 3; psn++ {
		p := roce.Packet{
			BTH:     roce.BTH{Opcode: roce.OpWriteMiddle, PKey: roce.PKeyDefault, DestQP: 0x11, PSN: psn},
			Payload: []byte("payload"),
		}
		wire := c.AppendIPID(nil, &p, src, dst, uint16(psn))
		fmt.Println(len(wire), c.CheckICRCID(wire, src, dst, uint16(psn)) == nil)
	}
	// Output:
	// 24 true
	// 24 true
	// 24 true
}
