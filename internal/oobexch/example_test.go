package oobexch_test

import (
	"fmt"
	"net/netip"

	"github.com/ucgo/ucgo/internal/oobexch"
)

func ExampleParseDest() {
	// What rdma-core's ibv_rc_pingpong server answered in the rxe VM.
	msg := []byte("0000:000011:5918b6:00000000000000000000ffff0a4d0002\x00")
	d, err := oobexch.ParseDest(msg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d)
	fmt.Println(d.Addr())
	// Output:
	// LID 0x0000, QPN 0x000011, PSN 0x5918b6, GID ::ffff:10.77.0.2
	// 10.77.0.2
}

func ExampleDest_MarshalBinary() {
	d := oobexch.Dest{QPN: 0x11, PSN: 0x123456, GID: oobexch.GIDFromAddr(netip.MustParseAddr("10.77.0.1"))}
	b, _ := d.MarshalBinary()
	fmt.Printf("%d bytes: %q\n", len(b), b)
	// Output:
	// 52 bytes: "0000:000011:123456:00000000000000000000ffff0a4d0001\x00"
}
