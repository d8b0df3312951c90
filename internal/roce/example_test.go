package roce_test

import (
	"fmt"
	"net/netip"

	"github.com/ucgo/ucgo/internal/roce"
)

func Example() {
	src := netip.MustParseAddrPort("10.77.0.1:49152")
	dst := netip.MustParseAddrPort("10.77.0.2:4791")

	// An RDMA WRITE ONLY of 5 bytes to the peer's QP 0x11.
	p := roce.Packet{
		BTH: roce.BTH{
			Opcode: roce.OpWriteOnly, PKey: roce.PKeyDefault,
			DestQP: 0x11, AckReq: true, PSN: 0x123456,
		},
		RETH:    roce.RETH{VA: 0x7f0000001000, RKey: 0x1234, DMALen: 5},
		Payload: []byte("hello"),
	}
	wire := roce.Append(nil, &p, src, dst) // the UDP payload to send to dst
	fmt.Println(len(wire), "bytes, pad", wire[1]>>4&3)

	// The receiver, given the UDP payload and the addresses its socket reported:
	if err := roce.CheckICRC(wire, src, dst); err != nil {
		fmt.Println(err)
		return
	}
	var q roce.Packet
	if err := roce.Decode(wire, &q); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%v QP %#x PSN %#x VA %#x rkey %#x %q\n",
		q.BTH.Opcode, q.BTH.DestQP, q.BTH.PSN, q.RETH.VA, q.RETH.RKey, q.Payload)

	// A flipped payload bit is caught.
	wire[p.HeaderLen()] ^= 1
	fmt.Println(roce.CheckICRC(wire, src, dst))
	// Output:
	// 40 bytes, pad 3
	// RDMA_WRITE_ONLY QP 0x11 PSN 0x123456 VA 0x7f0000001000 rkey 0x1234 "hello"
	// roce: bad ICRC
}
