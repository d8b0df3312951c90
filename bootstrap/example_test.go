package bootstrap_test

import (
	"errors"
	"fmt"

	"github.com/ucgo/ucgo/bootstrap"
)

// Each rank publishes a value, waits for the others and reads its
// neighbour's. Run it under "mpiexec -n 2" (or srun --mpi=pmi2 -n 2).
func ExampleFromEnv() {
	c, err := bootstrap.FromEnv()
	if errors.Is(err, bootstrap.ErrNoPMI) {
		return // not started by a launcher
	}
	if err != nil {
		panic(err)
	}
	defer c.Finalize()
	if err := c.Put(fmt.Sprintf("addr-%d", c.Rank()), "0a0b0c"); err != nil {
		panic(err)
	}
	if err := c.Barrier(); err != nil {
		panic(err)
	}
	peer, err := c.Get(fmt.Sprintf("addr-%d", (c.Rank()+1)%c.Size()))
	if err != nil {
		panic(err)
	}
	fmt.Println("neighbour's address:", peer)
}
