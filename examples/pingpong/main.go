package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ucgo/ucgo/bootstrap"
	"github.com/ucgo/ucgo/ucp"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "pingpong:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pingpong", flag.ContinueOnError)
	iters := fs.Int("n", 10000, "round trips")
	size := fs.Int("s", 8, "message size in bytes (at least 8)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *iters < 1 || *size < 8 {
		return fmt.Errorf("-n %d -s %d: want n >= 1 and s >= 8", *iters, *size)
	}
	w, err := bootstrap.Start(bootstrap.WorldOptions{})
	if err != nil {
		return err
	}
	defer w.Close()
	if w.Size() != 2 {
		return fmt.Errorf("pingpong runs on 2 ranks, not %d", w.Size())
	}
	me, peer := w.Rank(), 1-w.Rank()
	ep, err := w.EP(peer)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	wait := func(r *ucp.Request) error {
		defer r.Release()
		return r.Wait(ctx)
	}
	out, in := make([]byte, *size), make([]byte, *size)
	start := time.Now()
	for i := 0; i < *iters; i++ {
		if me == 0 {
			binary.LittleEndian.PutUint64(out, uint64(i))
			if err := wait(ep.TagSend(out, bootstrap.Tag(me, 1), nil)); err != nil {
				return err
			}
		}
		if err := wait(w.Worker.TagRecv(in, bootstrap.Tag(peer, 1), bootstrap.Exact, nil)); err != nil {
			return err
		}
		if me == 1 {
			if err := wait(ep.TagSend(in, bootstrap.Tag(me, 1), nil)); err != nil {
				return err
			}
		} else if got := binary.LittleEndian.Uint64(in); got != uint64(i) {
			return fmt.Errorf("round trip %d came back as %d", i, got)
		}
	}
	if me == 0 {
		oneWay := time.Since(start) / time.Duration(2**iters)
		fmt.Fprintf(stdout, "pingpong: %d round trips of %d bytes checked, %.2f us one-way\n", *iters, *size, float64(oneWay.Nanoseconds())/1000)
	}
	return w.Barrier() // neither rank leaves while the other still needs it
}
