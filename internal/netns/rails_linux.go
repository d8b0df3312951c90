package netns

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	"go.uber.org/multierr"
	"golang.org/x/sys/unix"
)

// Rails is two network namespaces joined by several veth pairs, each on a
// subnet of its own: two hosts with one NIC per rail. A[i] and B[i] are
// the two ends of rail i; every A[i] is the same namespace (the same
// name and path), and every B[i] the other, so a rail's end is an [NS]
// whose Link, Index and Addr are that rail's, and SetLink, Flap and
// SetRate act on that rail alone.
type Rails struct {
	A, B []*NS
	MTU  int

	hub string // path of the switches' namespace (NewSwitchedRails)

	once sync.Once
	err  error
}

// maxRails bounds the rails of a pair.
const maxRails = 8

// NewRails creates two namespaces (named Prefix+"<pid>-<random>-a" and
// "-b") joined by n veth pairs: rail i's ends are "ucgo-a<i>" with
// 10.x.(y+i).1/24 and "ucgo-b<i>" with 10.x.(y+i).2/24. It returns once
// every end reports carrier. It skips the test when not root;
// tb.Cleanup deletes everything, [Rails.Close] does it earlier.
func NewRails(tb testing.TB, n int, opts ...Option) (*Rails, error) {
	tb.Helper()
	return forTest(tb, func() (*Rails, bool, error) {
		r, err := newRails(n, opts)
		return r, r != nil, err
	})
}

func newRails(n int, opts []Option) (*Rails, error) {
	r, err := railsLayout(n, opts)
	if err != nil {
		return nil, err
	}
	return r, r.setup()
}

// railsLayout names the namespaces and ends of n rails and draws their
// subnets.
func railsLayout(n int, opts []Option) (*Rails, error) {
	if n < 1 || n > maxRails {
		return nil, fmt.Errorf("netns: %d rails (1..%d)", n, maxRails)
	}
	nm, err := newNaming(opts)
	if err != nil {
		return nil, err
	}
	base, x, y := nm.base, nm.x, nm.y%(256-maxRails)
	r := &Rails{MTU: nm.cfg.mtu}
	for i := 0; i < n; i++ {
		sub := [4]byte{10, x, y + byte(i), 0}
		a, b := sub, sub
		a[3], b[3] = 1, 2
		r.A = append(r.A, &NS{name: base + "-a", link: fmt.Sprintf("ucgo-a%d", i), prefix: netip.PrefixFrom(netip.AddrFrom4(a), 24)})
		r.B = append(r.B, &NS{name: base + "-b", link: fmt.Sprintf("ucgo-b%d", i), prefix: netip.PrefixFrom(netip.AddrFrom4(b), 24)})
	}
	return r, nil
}

func (r *Rails) setup() error {
	for _, ends := range [][]*NS{r.A, r.B} {
		path, err := create(ends[0].name)
		if err != nil {
			return err
		}
		for _, e := range ends {
			e.path = path
		}
	}
	bfd, err := unix.Open(r.B[0].path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", r.B[0].path, err)
	}
	defer unix.Close(bfd)
	err = r.A[0].Do(func() error {
		nl, err := openRtnl()
		if err != nil {
			return err
		}
		defer nl.Close()
		for i := range r.A {
			if err := nl.addVeth(r.A[i].link, r.B[i].link, bfd, r.MTU, i); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return r.configureEnds()
}

// Close deletes the veth pairs and both namespaces. It is idempotent.
func (r *Rails) Close() error {
	r.once.Do(func() {
		if len(r.A) == 0 || r.A[0].path == "" {
			return
		}
		err := r.A[0].Do(func() error {
			nl, err := openRtnl()
			if err != nil {
				return err
			}
			defer nl.Close()
			var errs error
			for _, e := range r.A {
				if e.index != 0 {
					if err := nl.delLink(e.index); err != nil && !errors.Is(err, unix.ENODEV) {
						errs = multierr.Append(errs, err)
					}
				}
			}
			return errs
		})
		r.err = multierr.Append(r.err, err)
		if r.hub != "" {
			r.err = multierr.Append(r.err, r.closeHub())
		}
		for _, ends := range [][]*NS{r.A, r.B} {
			if ends[0].path != "" {
				r.err = multierr.Append(r.err, remove(ends[0].path))
			}
		}
	})
	return r.err
}

// configureEnds gives every rail end its address and waits until each
// has carrier.
func (r *Rails) configureEnds() error {
	ends := append(append([]*NS(nil), r.A...), r.B...)
	for _, e := range ends {
		if err := e.configure(); err != nil {
			return err
		}
	}
	for _, e := range ends {
		if err := e.waitRunning(waitCarrier); err != nil {
			return err
		}
	}
	return nil
}
