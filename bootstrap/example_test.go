package bootstrap_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ucgo/ucgo/bootstrap"
	"github.com/ucgo/ucgo/ucp"
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

// Every rank sends its rank to the next one and receives from the
// previous one, naming the sender in the tag. Run it under
// "mpiexec -n 4" or "srun --mpi=pmi2 -n 4".
func ExampleStart() {
	w, err := bootstrap.Start(bootstrap.WorldOptions{})
	if errors.Is(err, bootstrap.ErrNoPMI) {
		return // not started by a launcher
	}
	if err != nil {
		panic(err)
	}
	defer w.Close()
	next, prev := (w.Rank()+1)%w.Size(), (w.Rank()+w.Size()-1)%w.Size()
	ep, err := w.EP(next)
	if err != nil {
		panic(err)
	}
	buf := make([]byte, 8)
	recv := w.Worker.TagRecv(buf, bootstrap.Tag(prev, 1), bootstrap.Exact, nil)
	send := ep.TagSend([]byte{byte(w.Rank())}, bootstrap.Tag(w.Rank(), 1), nil)
	for _, r := range []*ucp.Request{send, recv} {
		if err := r.Wait(context.Background()); err != nil {
			panic(err)
		}
	}
	fmt.Println("rank", w.Rank(), "heard from rank", buf[0])
	if err := w.Barrier(); err != nil { // no rank leaves before all heard
		panic(err)
	}
}

// A World's tags carry the sender's rank in their top bits; a receive
// names its sender with Exact, or takes any sender's tag 7 with AnyRank.
func ExampleTag() {
	t := bootstrap.Tag(3, 7)
	fmt.Printf("tag %#x from rank %d\n", t, bootstrap.TagRank(t))
	fmt.Println("matches a receive of (rank 5, 7) with AnyRank:", bootstrap.Tag(5, 7)&bootstrap.AnyRank == t&bootstrap.AnyRank)
	fmt.Println("matches it with Exact:", bootstrap.Tag(5, 7) == t)
	// Output:
	// tag 0x30000000007 from rank 3
	// matches a receive of (rank 5, 7) with AnyRank: true
	// matches it with Exact: false
}
