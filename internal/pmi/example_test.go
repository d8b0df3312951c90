package pmi_test

import (
	"errors"
	"fmt"

	"github.com/ucgo/ucgo/internal/pmi"
)

// Each rank publishes its address, waits for the others and reads its
// neighbour's. Run it under "mpiexec -n 2".
func Example() {
	c, err := pmi.FromEnv()
	if errors.Is(err, pmi.ErrNoPMI) {
		return // not started by mpiexec
	}
	if err != nil {
		panic(err)
	}
	defer c.Finalize()
	if err := c.Put(fmt.Sprintf("addr-%d", c.Rank), "0a0b0c"); err != nil {
		panic(err)
	}
	if err := c.Barrier(); err != nil {
		panic(err)
	}
	peer, err := c.Get(fmt.Sprintf("addr-%d", (c.Rank+1)%c.Size))
	if err != nil {
		panic(err)
	}
	fmt.Println("neighbour's address:", peer)
}
