package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/ucgo/ucgo/bootstrap"
	"github.com/ucgo/ucgo/ucp"
	"github.com/ucgo/ucgo/uct"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ftallreduce:", err)
		os.Exit(1)
	}
}

type options struct {
	iters, length, kill, at int
}

func parse(args []string) (options, error) {
	fs := flag.NewFlagSet("ftallreduce", flag.ContinueOnError)
	var o options
	fs.IntVar(&o.iters, "iters", 100, "iterations")
	fs.IntVar(&o.length, "len", 1024, "vector length (uint64 elements)")
	fs.IntVar(&o.kill, "kill", -1, "rank that SIGKILLs itself (-1: none)")
	fs.IntVar(&o.at, "at", 50, "iteration in which -kill's rank dies")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.iters < 1 || o.iters >= 1<<counterBits || o.length < 1 {
		return o, fmt.Errorf("-iters %d, -len %d: want 1 <= iters < %d, len >= 1", o.iters, o.length, 1<<counterBits)
	}
	if o.kill >= 0 && (o.at < 0 || o.at >= o.iters-1) {
		return o, fmt.Errorf("-at %d: the kill must come before the last iteration (0 <= at < %d)", o.at, o.iters-1)
	}
	return o, nil
}

func run(args []string, stdout io.Writer) error {
	// hydra ends the job when a rank dies by a signal: run the rank as a
	// child whose death this process reports as an exit status
	bootstrap.Supervise()
	o, err := parse(args)
	if err != nil {
		return err
	}
	p := &proc{o: o, failed: map[int]error{}, purged: map[int]bool{}}
	w, err := bootstrap.Start(bootstrap.WorldOptions{
		Eager:        true, // every endpoint, with its rank, exists before a failure
		Config:       ucp.Config{ErrorMode: ucp.ErrorModePeer},
		ErrorHandler: p.onError,
	})
	if err != nil {
		return err
	}
	p.w, p.me = w, w.Rank()
	if o.kill >= w.Size() {
		return errors.Join(fmt.Errorf("-kill %d: no such rank in a job of %d", o.kill, w.Size()), w.Close())
	}
	for r := 0; r < w.Size(); r++ {
		p.group = append(p.group, r)
	}
	if err := w.Barrier(); err != nil { // every rank connected before any dies
		return errors.Join(err, w.Close())
	}
	sum, err := p.loop()
	if err != nil {
		return errors.Join(err, w.Close())
	}
	// the ranks the survivors agreed are gone; ranks that fail after
	// finishing (their exit) are no failure of the job
	var gone []string
	for r := 0; r < w.Size(); r++ {
		if !slices.Contains(p.group, r) {
			gone = append(gone, fmt.Sprintf("rank %d failed (%s): %v", r, class(p.failed[r]), p.failed[r]))
		}
	}
	if len(gone) > 0 && p.suspended {
		gone = append(gone, "matching was suspended until the purge")
	}
	line := fmt.Sprintf("rank %d: %d iterations, sum %d, ranks %s from iteration %d of epoch %d",
		p.me, o.iters, sum, ranks(p.group), p.from, p.epoch)
	if len(gone) > 0 {
		line += "; " + strings.Join(gone, "; ")
	}
	fmt.Fprintln(stdout, line)
	return w.Close()
}

// class names the status a failed endpoint reported.
func class(err error) string {
	switch {
	case errors.Is(err, uct.ErrPeerFailed):
		return "peer failed"
	case errors.Is(err, uct.ErrEndpointTimeout):
		return "timed out"
	case errors.Is(err, errReported):
		return "reported by the others"
	}
	return "other"
}

func ranks(g []int) string {
	s := make([]string, len(g))
	for i, r := range g {
		s[i] = fmt.Sprint(r)
	}
	return strings.Join(s, ",")
}
