package shm_test

import (
	"fmt"

	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/uct"
)

// A receiver that finds its peers slow to be heard can ask whether a live
// process holds its receive FIFO (a writer stopped in the middle of a
// send) and, when one does, whether the others still have room.
func ExampleIface_HeldFIFO() {
	md, err := shm.New().OpenMD(uct.MDParams{})
	if err != nil {
		panic(err)
	}
	defer md.Close()
	it, err := md.OpenIface(uct.IfaceParams{})
	if err != nil {
		panic(err)
	}
	defer it.Close()
	it.Progress()
	if h := it.(*shm.Iface).HeldFIFO(); h.Writer != 0 {
		fmt.Printf("process %d holds the FIFO since %v (lap used up: %v)\n", h.Writer, h.Since, h.Full)
	} else {
		fmt.Printf("no writer holds the FIFO; %d holds so far\n", h.Holds)
	}
	// Output: no writer holds the FIFO; 0 holds so far
}
