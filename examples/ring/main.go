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
		fmt.Fprintln(os.Stderr, "ring:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ring", flag.ContinueOnError)
	laps := fs.Int("laps", 10, "times the token goes around")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *laps < 1 || uint64(*laps) >= 1<<bootstrap.RankShift {
		return fmt.Errorf("-laps %d: want 1 to %d", *laps, uint64(1)<<bootstrap.RankShift-1)
	}
	w, err := bootstrap.Start(bootstrap.WorldOptions{})
	if err != nil {
		return err
	}
	defer w.Close()
	me, n := w.Rank(), w.Size()
	if n < 2 {
		return fmt.Errorf("a ring needs 2 ranks or more, not %d", n)
	}
	next, prev := (me+1)%n, (me+n-1)%n
	ep, err := w.EP(next)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	wait := func(r *ucp.Request) error {
		defer r.Release()
		return r.Wait(ctx)
	}
	perLap := uint64(n * (n + 1) / 2)
	buf := make([]byte, 8)
	var token uint64
	for lap := 0; lap < *laps; lap++ {
		// the lap number is the tag, so a fast rank's next token cannot
		// be taken for this one
		if me != 0 {
			if err := wait(w.Worker.TagRecv(buf, bootstrap.Tag(prev, uint64(lap)), bootstrap.Exact, nil)); err != nil {
				return err
			}
			token = binary.LittleEndian.Uint64(buf)
		}
		binary.LittleEndian.PutUint64(buf, token+uint64(me+1))
		if err := wait(ep.TagSend(buf, bootstrap.Tag(me, uint64(lap)), nil)); err != nil {
			return err
		}
		if me == 0 {
			if err := wait(w.Worker.TagRecv(buf, bootstrap.Tag(prev, uint64(lap)), bootstrap.Exact, nil)); err != nil {
				return err
			}
			if token = binary.LittleEndian.Uint64(buf); token != uint64(lap+1)*perLap {
				return fmt.Errorf("after lap %d the token is %d, want %d", lap, token, uint64(lap+1)*perLap)
			}
		}
	}
	if me == 0 {
		fmt.Fprintf(stdout, "ring: %d ranks, %d laps, token %d\n", n, *laps, token)
	}
	return w.Barrier()
}
