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

// A handler installed with SetAMSourceHandler learns which iface sent
// each message; an endpoint names its peer iface in the same terms, so a
// receiver can tell which of its connections a message came from.
func ExampleIface_SetAMSourceHandler() {
	md, err := shm.New().OpenMD(uct.MDParams{})
	if err != nil {
		panic(err)
	}
	defer md.Close()
	recv, _ := md.OpenIface(uct.IfaceParams{})
	defer recv.Close()
	send, _ := md.OpenIface(uct.IfaceParams{})
	defer send.Close()

	// the receiver's endpoint back to the sender names the sender's origin
	back, err := recv.Connect(send.Address(), uct.EPParams{})
	if err != nil {
		panic(err)
	}
	defer back.Close()
	done := false
	recv.(uct.AMSourceIface).SetAMSourceHandler(7, func(_ any, data []byte, _ uct.AMFlags, src uct.AMSource) {
		origin, _ := recv.(uct.AMOriginIface).AMSourceOrigin(src)
		fmt.Println("from the sender:", origin == back.(uct.AMOriginEndpoint).PeerOrigin())
		done = true
	}, nil)
	ep, err := send.Connect(recv.Address(), uct.EPParams{})
	if err != nil {
		panic(err)
	}
	defer ep.Close()
	if err := ep.AMShort(7, 42, nil); err != nil {
		panic(err)
	}
	for !done {
		recv.Progress()
	}
	// Output: from the sender: true
}
