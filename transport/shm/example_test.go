package shm_test

import (
	"fmt"

	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/uct"
)

// Open two ifaces (here in one process; normally in two, exchanging
// Address() out of band), connect and send an active message.
func Example() {
	md, err := shm.New().OpenMD(uct.MDParams{})
	if err != nil {
		panic(err)
	}
	defer md.Close()
	recv, _ := md.OpenIface(uct.IfaceParams{})
	defer recv.Close()
	send, _ := md.OpenIface(uct.IfaceParams{})
	defer send.Close()

	done := false
	recv.SetAMHandler(7, func(_ any, data []byte, _ uct.AMFlags) {
		fmt.Printf("got %q\n", data[8:]) // 8-byte AM header, then payload
		done = true
	}, nil)
	ep, err := send.Connect(recv.Address(), uct.EPParams{})
	if err != nil {
		panic(err)
	}
	if err := ep.AMShort(7, 42, []byte("hello")); err != nil {
		panic(err)
	}
	for !done {
		recv.Progress()
	}
	// Output: got "hello"
}
