package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/ucgo/ucgo/bootstrap"
	"github.com/ucgo/ucgo/ucp"
)

// Tag bits below the rank: kind, epoch, and an iteration or round.
const (
	counterBits = 20
	epochBits   = 16
	kindShift   = counterBits + epochBits

	kindData  = 1
	kindAgree = 2
	kindDone  = 3
)

func tag(rank, kind, epoch, counter int) uint64 {
	return bootstrap.Tag(rank, uint64(kind)<<kindShift|uint64(epoch%(1<<epochBits))<<counterBits|uint64(counter))
}

// phaseLimit bounds each wait, so that a lost message ends the program
// with an error instead of a hang.
const phaseLimit = 2 * time.Minute

// errFailure says a rank of the group failed during a phase.
var errFailure = errors.New("a rank of the group failed")

type proc struct {
	o     options
	w     *bootstrap.World
	me    int
	group []int // live ranks, ascending

	failed map[int]error // ranks whose endpoint failed, with its status
	purged map[int]bool
	// suspended: a failure found tag matching suspended, as ucp's peer
	// error mode does until the failed endpoint is purged
	suspended bool
	epoch     int
	from      int      // first iteration with the current group
	sums      []uint64 // per iteration: the sum of the result's elements
}

// onError runs from Progress when the endpoint to rank fails.
func (p *proc) onError(rank int, _ *ucp.Endpoint, err error) {
	if _, ok := p.failed[rank]; !ok {
		p.failed[rank] = err
	}
}

// newFailure reports a failure of a group member not yet purged.
func (p *proc) newFailure() bool {
	for _, r := range p.group {
		if _, ok := p.failed[r]; ok && !p.purged[r] {
			return true
		}
	}
	return false
}

// peerFailed reports whether the endpoint to rank failed, and records its
// status: a request to or from it may complete with the failure before
// the endpoint's error handler runs.
func (p *proc) peerFailed(rank int) bool {
	if _, ok := p.failed[rank]; ok {
		return true
	}
	ep, err := p.w.EP(rank)
	if err != nil {
		return false
	}
	if err := ep.Err(); err != nil {
		p.onError(rank, ep, err)
		return true
	}
	return false
}

// wait progresses the worker until every request is done or stop says to
// give up (then it returns errFailure).
func (p *proc) wait(reqs []*ucp.Request, stop func() bool) error {
	deadline := time.Now().Add(phaseLimit)
	for {
		done := true
		for _, r := range reqs {
			if !r.Done() {
				done = false
				break
			}
		}
		if done {
			return nil
		}
		if stop != nil && stop() {
			return errFailure
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rank %d: no progress for %v", p.me, phaseLimit)
		}
		if p.w.Worker.Progress() == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			p.w.Worker.Wait(ctx)
			cancel()
		}
	}
}

// drop cancels the requests that are still posted and releases the others
// once done; sends still in flight complete on their own.
func drop(reqs []*ucp.Request) {
	for _, r := range reqs {
		r.Cancel()
		if r.Done() {
			r.Release()
		}
	}
}

func vector(rank, iter, n int) []byte {
	b := make([]byte, 8*n)
	for j := 0; j < n; j++ {
		binary.LittleEndian.PutUint64(b[8*j:], uint64((rank+1)*(iter+1)+j))
	}
	return b
}

// loop runs the iterations, recovering from failures, and returns the sum
// of all results.
func (p *proc) loop() (uint64, error) {
	p.sums = make([]uint64, p.o.iters)
	for i := 0; i < p.o.iters; {
		err := p.iteration(i)
		if errors.Is(err, errFailure) {
			if i, err = p.recover(i); err != nil {
				return 0, err
			}
			continue
		}
		if err != nil {
			return 0, err
		}
		i++
	}
	if err := p.finish(); err != nil {
		return 0, err
	}
	var total uint64
	for _, s := range p.sums {
		total += s
	}
	return total, nil
}

// iteration sends this rank's vector to every other member, receives
// theirs, sums and checks the result.
func (p *proc) iteration(i int) error {
	n := p.o.length
	var recvs, sends []*ucp.Request
	peerOf := map[*ucp.Request]int{}
	bufs := map[int][]byte{}
	for _, r := range p.group {
		if r != p.me {
			bufs[r] = make([]byte, 8*n)
			rr := p.w.Worker.TagRecv(bufs[r], tag(r, kindData, p.epoch, i), bootstrap.Exact, nil)
			peerOf[rr] = r
			recvs = append(recvs, rr)
		}
	}
	mine := vector(p.me, i, n)
	others := 0
	for _, r := range p.group {
		if r == p.me {
			continue
		}
		if p.me == p.o.kill && i == p.o.at && others >= (len(p.group)-1)/2 {
			break // the victim reaches only half of the others
		}
		others++
		ep, err := p.w.EP(r)
		if err != nil {
			return err
		}
		sr := ep.TagSend(mine, tag(p.me, kindData, p.epoch, i), nil)
		if sr == nil {
			continue // sent at once: nothing to wait for
		}
		peerOf[sr] = r
		sends = append(sends, sr)
	}
	if p.me == p.o.kill && i == p.o.at {
		p.wait(sends, nil)
		suicide()
	}
	if err := p.wait(append(recvs, sends...), p.newFailure); err != nil {
		drop(append(recvs, sends...))
		return err
	}
	for _, r := range append(recvs, sends...) {
		if err := r.Err(); err != nil {
			drop(append(recvs, sends...))
			if p.peerFailed(peerOf[r]) {
				return errFailure
			}
			return fmt.Errorf("rank %d, iteration %d: %w", p.me, i, err)
		}
	}
	var sum uint64
	for j := 0; j < n; j++ {
		v := binary.LittleEndian.Uint64(mine[8*j:])
		want := uint64(j) * uint64(len(p.group))
		for _, r := range p.group {
			want += uint64((r + 1) * (i + 1))
			if r != p.me {
				v += binary.LittleEndian.Uint64(bufs[r][8*j:])
			}
		}
		if v != want {
			return fmt.Errorf("rank %d, iteration %d, element %d: %d, want %d", p.me, i, j, v, want)
		}
		sum += v
	}
	drop(append(recvs, sends...))
	p.sums[i] = sum
	return nil
}

// finish tells every member this rank is done and waits until each one
// said so or failed: a member that completed the last iteration has all
// it needs, so its exit afterwards is no failure of the job.
func (p *proc) finish() error {
	var recvs, sends []*ucp.Request
	from := map[*ucp.Request]int{}
	for _, r := range p.group {
		if r == p.me {
			continue
		}
		rr := p.w.Worker.TagRecv(nil, tag(r, kindDone, p.epoch, 0), bootstrap.Exact, nil)
		from[rr] = r
		recvs = append(recvs, rr)
		ep, err := p.w.EP(r)
		if err != nil {
			return err
		}
		sends = append(sends, ep.TagSend(nil, tag(p.me, kindDone, p.epoch, 0), nil))
	}
	// done when every receive completed or its sender failed
	settled := func() bool {
		for _, rr := range recvs {
			if _, dead := p.failed[from[rr]]; !rr.Done() && !dead {
				return false
			}
		}
		return true
	}
	err := p.wait(recvs, settled)
	if errors.Is(err, errFailure) {
		err = nil
	}
	drop(recvs)
	for _, s := range sends {
		if s.Done() { // the others complete on their own
			s.Release()
		}
	}
	return err
}
