package roce_test

import (
	"fmt"
	"net/netip"

	"github.com/ucgo/ucgo/internal/roce"
)

func ExampleCopyCheck() {
	src := netip.MustParseAddrPort("10.77.0.1:49152")
	dst := netip.MustParseAddrPort("10.77.0.2:4791")
	p := roce.Packet{
		BTH:     roce.BTH{Opcode: roce.OpWriteMiddle, PKey: roce.PKeyDefault, DestQP: 0x11, PSN: 7},
		Payload: []byte("the middle of a long RDMA WRITE"),
	}
	wire := roce.Append(nil, &p, src, dst)

	// The receiver knows where the next bytes of the WRITE go; it copies
	// the payload there while it checks the ICRC, and acts on the
	// packet only if the check passes.
	dest := make([]byte, len(p.Payload))
	var k roce.CopyCheck
	if err := k.Start(wire, p.HeaderLen(), src, dst, 0); err != nil {
		fmt.Println(err)
		return
	}
	k.Copy(dest[:10]) // in pieces, as a scatter list needs
	k.Copy(dest[10:])
	fmt.Printf("%v %q\n", k.Check(), dest)

	wire[p.HeaderLen()+3] ^= 0x20 // corrupted on the way
	_ = k.Start(wire, p.HeaderLen(), src, dst, 0)
	k.Copy(dest)
	fmt.Println(k.Check())
	// Output:
	// <nil> "the middle of a long RDMA WRITE"
	// roce: bad ICRC
}

func ExampleCheckICRCID() {
	src := netip.MustParseAddrPort("10.77.0.1:49152")
	dst := netip.MustParseAddrPort("10.77.0.2:4791")
	p := roce.Packet{
		BTH:     roce.BTH{Opcode: roce.OpSendOnly, PKey: roce.PKeyDefault, DestQP: 0x11, PSN: 9},
		Payload: []byte("third segment"),
	}
	// The third segment of a UDP GSO send carries IP ID 2.
	wire := roce.AppendIPID(nil, &p, src, dst, 2)
	fmt.Println(roce.CheckICRCID(wire, src, dst, 2)) // guessed right
	fmt.Println(roce.CheckICRCID(wire, src, dst, 0)) // wrong: found all the same
	// Output:
	// <nil>
	// <nil>
}
