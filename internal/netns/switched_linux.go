package netns

import (
	"errors"
	"fmt"
	"net"
	"testing"

	"go.uber.org/multierr"
	"golang.org/x/sys/unix"
)

// NewSwitchedRails is [NewRails] with a switch on every rail: each end's
// veth pair leads to a port of the rail's own bridge in a third, hub
// namespace ("-hub"), as two hosts whose NICs are cabled to switches. So
// [NS.SetLink] on one end takes that host's NIC down while the other
// host's link on the rail keeps its carrier, as on a real network (with
// direct veth pairs the other end loses carrier too). Addresses, names
// and cleanup are NewRails'.
func NewSwitchedRails(tb testing.TB, n int, opts ...Option) (*Rails, error) {
	tb.Helper()
	return forTest(tb, func() (*Rails, bool, error) {
		r, err := railsLayout(n, opts)
		if err != nil {
			return nil, false, err
		}
		return r, true, r.setupSwitched()
	})
}

func (r *Rails) setupSwitched() error {
	for _, ends := range [][]*NS{r.A, r.B} {
		path, err := create(ends[0].name)
		if err != nil {
			return err
		}
		for _, e := range ends {
			e.path = path
		}
	}
	hub, err := create(r.A[0].name[:len(r.A[0].name)-2] + "-hub")
	if err != nil {
		return err
	}
	r.hub = hub
	var fds [2]int
	for i, ends := range [][]*NS{r.A, r.B} {
		fd, err := unix.Open(ends[0].path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", ends[0].path, err)
		}
		defer unix.Close(fd)
		fds[i] = fd
	}
	err = do(hub, func() error {
		nl, err := openRtnl()
		if err != nil {
			return err
		}
		defer nl.Close()
		for i := range r.A {
			brName := fmt.Sprintf("ucgo-br%d", i)
			if err := nl.addBridge(brName, r.MTU); err != nil {
				return err
			}
			br, err := net.InterfaceByName(brName)
			if err != nil {
				return fmt.Errorf("netns hub: %w", err)
			}
			for j, end := range []*NS{r.A[i], r.B[i]} {
				port := fmt.Sprintf("ucgo-h%c%d", "ab"[j], i)
				if err := nl.addVeth(port, end.link, fds[j], r.MTU, 2*i+j); err != nil {
					return err
				}
				ifi, err := net.InterfaceByName(port)
				if err != nil {
					return fmt.Errorf("netns hub: %w", err)
				}
				if err := nl.setMaster(ifi.Index, br.Index); err != nil {
					return err
				}
				if err := nl.setUp(ifi.Index, true); err != nil {
					return err
				}
			}
			if err := nl.setUp(br.Index, true); err != nil {
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

// closeHub deletes the hub's ports and bridges, then the hub namespace.
func (r *Rails) closeHub() error {
	err := do(r.hub, func() error {
		nl, err := openRtnl()
		if err != nil {
			return err
		}
		defer nl.Close()
		var errs error
		ifs, err := net.Interfaces()
		if err != nil {
			return err
		}
		for _, ifi := range ifs {
			if ifi.Flags&net.FlagLoopback == 0 {
				if err := nl.delLink(ifi.Index); err != nil && !errors.Is(err, unix.ENODEV) {
					errs = multierr.Append(errs, err)
				}
			}
		}
		return errs
	})
	return multierr.Append(err, remove(r.hub))
}
