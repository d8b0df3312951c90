package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/ucgo/ucgo/ucp"
)

// errReported is the status of a rank that other survivors, not this
// rank's endpoint, saw fail.
var errReported = errors.New("reported failed by the other survivors")

// verdict is what survivors agree on: the failed ranks and the iteration
// to resume at.
type verdict struct {
	failed []bool
	resume int
}

func (v verdict) encode() []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(v.resume))
	for _, f := range v.failed {
		if f {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	return b
}

func decodeVerdict(b []byte, n int) (verdict, error) {
	if len(b) != 4+n {
		return verdict{}, fmt.Errorf("agreement message of %d bytes, want %d", len(b), 4+n)
	}
	v := verdict{resume: int(binary.LittleEndian.Uint32(b)), failed: make([]bool, n)}
	for i := range v.failed {
		v.failed[i] = b[4+i] != 0
	}
	return v, nil
}

func (v verdict) equal(o verdict) bool {
	return v.resume == o.resume && slices.Equal(v.failed, o.failed)
}

// purgeFailed purges the endpoints of failed members (which resumes tag
// matching) so that the receives from the survivors can match again.
func (p *proc) purgeFailed(failed []bool) error {
	for r, f := range failed {
		if !f || p.purged[r] {
			continue
		}
		ep, err := p.w.EP(r)
		if err != nil {
			return err
		}
		p.w.Worker.Purge(ep)
		p.purged[r] = true
		if _, ok := p.failed[r]; !ok {
			p.failed[r] = errReported
		}
	}
	return nil
}

// recover runs after a failure in iteration i: it purges the failed ranks,
// agrees with the other survivors on the failed set and on the iteration
// to resume at, shrinks the group and returns that iteration.
func (p *proc) recover(i int) (int, error) {
	n := p.w.Size()
	v := verdict{failed: make([]bool, n), resume: i}
	for r := range p.failed {
		v.failed[r] = true
	}
	// the failure suspended tag matching; purging every failed rank
	// resumes it
	p.suspended = p.suspended || p.w.Worker.MatchingSuspended()
	if err := p.purgeFailed(v.failed); err != nil {
		return 0, err
	}
	if p.w.Worker.MatchingSuspended() {
		return 0, fmt.Errorf("rank %d: matching still suspended after purging the failed ranks", p.me)
	}
	for round := 0; round < 1<<counterBits; round++ {
		if err := p.purgeFailed(v.failed); err != nil {
			return 0, err
		}
		var peers []int
		for _, r := range p.group {
			if r != p.me && !v.failed[r] {
				peers = append(peers, r)
			}
		}
		msg := v.encode()
		var recvs, sends []*ucp.Request
		bufs := make([][]byte, len(peers))
		for k, r := range peers {
			bufs[k] = make([]byte, len(msg))
			recvs = append(recvs, p.w.Worker.TagRecv(bufs[k], tag(r, kindAgree, p.epoch, round), ^uint64(0), nil))
		}
		for _, r := range peers {
			ep, err := p.w.EP(r)
			if err != nil {
				return 0, err
			}
			sends = append(sends, ep.TagSend(msg, tag(p.me, kindAgree, p.epoch, round), nil))
		}
		// A peer that fails now is purged, which completes its receive.
		stop := func() bool {
			if p.newFailure() {
				for r := range p.failed {
					v.failed[r] = true
				}
				if err := p.purgeFailed(v.failed); err != nil {
					return true
				}
			}
			return false
		}
		if err := p.wait(recvs, stop); err != nil {
			return 0, err
		}
		same := true
		next := verdict{failed: slices.Clone(v.failed), resume: v.resume}
		for k, rr := range recvs {
			if rr.Err() != nil {
				next.failed[peers[k]] = true
				same = false
				continue
			}
			o, err := decodeVerdict(bufs[k][:rr.Info().Length], n)
			if err != nil {
				return 0, fmt.Errorf("rank %d: from rank %d: %w", p.me, peers[k], err)
			}
			same = same && o.equal(v)
			next.resume = min(next.resume, o.resume)
			for r, f := range o.failed {
				next.failed[r] = next.failed[r] || f
			}
		}
		drop(recvs)
		for _, s := range sends {
			if s.Done() {
				s.Release()
			}
		}
		if same && next.equal(v) {
			return p.shrink(v)
		}
		v = next
	}
	return 0, fmt.Errorf("rank %d: no agreement", p.me)
}

// shrink drops the agreed failed ranks from the group and starts a new
// epoch at the agreed iteration.
func (p *proc) shrink(v verdict) (int, error) {
	if err := p.purgeFailed(v.failed); err != nil {
		return 0, err
	}
	var g []int
	for _, r := range p.group {
		if !v.failed[r] {
			g = append(g, r)
		}
	}
	if !slices.Contains(g, p.me) {
		return 0, fmt.Errorf("rank %d: the survivors count this rank as failed", p.me)
	}
	p.group, p.epoch, p.from = g, p.epoch+1, v.resume
	for j := v.resume; j < len(p.sums); j++ {
		p.sums[j] = 0
	}
	return v.resume, nil
}
