package netns

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"

	"go.uber.org/multierr"
	"golang.org/x/sys/unix"
)

// Star is n network namespaces on one IPv4 subnet: each holds one end of
// a veth pair whose other end is a port of a bridge in a hub namespace,
// so every member reaches every other, as hosts on one switch.
type Star struct {
	// NS are the members; NS[i] has address 10.x.y.(i+1)/24 on its veth
	// end "ucgo-<i>".
	NS  []*NS
	MTU int

	hub  string // path of the hub namespace
	name string

	once sync.Once
	err  error
}

// maxStar bounds the members of a star (addresses .1 to .250).
const maxStar = 250

// NewStar creates n member namespaces (named Prefix+"<pid>-<random>-<i>")
// joined through a bridge in a hub namespace ("-hub"), with addresses
// 10.x.y.(i+1)/24, every link and the members' loopbacks up, and returns
// once every member's veth end reports carrier. It skips the test when not
// root; tb.Cleanup deletes everything, [Star.Close] does it earlier. The
// members' [NS.SetLink] cuts one member off the others.
func NewStar(tb testing.TB, n int, opts ...Option) (*Star, error) {
	tb.Helper()
	return forTest(tb, func() (*Star, bool, error) {
		s, err := newStar(n, opts)
		return s, s != nil, err
	})
}

func newStar(n int, opts []Option) (*Star, error) {
	if n < 1 || n > maxStar {
		return nil, fmt.Errorf("netns: star of %d namespaces (1..%d)", n, maxStar)
	}
	nm, err := newNaming(opts)
	if err != nil {
		return nil, err
	}
	base, x, y := nm.base, nm.x, nm.y
	s := &Star{MTU: nm.cfg.mtu, name: base}
	for i := 0; i < n; i++ {
		s.NS = append(s.NS, &NS{name: fmt.Sprintf("%s-%d", base, i), link: fmt.Sprintf("ucgo-%d", i),
			prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, x, y, byte(i + 1)}), 24)})
	}
	if err := s.setup(); err != nil {
		return s, err
	}
	return s, nil
}

const bridgeName = "ucgo-br"

func (s *Star) setup() error {
	hub, err := create(s.name + "-hub")
	if err != nil {
		return err
	}
	s.hub = hub
	for _, n := range s.NS {
		path, err := create(n.name)
		if err != nil {
			return err
		}
		n.path = path
	}
	err = do(s.hub, func() error {
		r, err := openRtnl()
		if err != nil {
			return err
		}
		defer r.Close()
		if err := r.addBridge(bridgeName, s.MTU); err != nil {
			return err
		}
		br, err := net.InterfaceByName(bridgeName)
		if err != nil {
			return fmt.Errorf("netns hub: %w", err)
		}
		for i, n := range s.NS {
			fd, err := unix.Open(n.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("open %s: %w", n.path, err)
			}
			port := fmt.Sprintf("ucgo-h%d", i)
			err = r.addVeth(port, n.link, fd, s.MTU, i)
			unix.Close(fd)
			if err != nil {
				return err
			}
			ifi, err := net.InterfaceByName(port)
			if err != nil {
				return fmt.Errorf("netns hub: %w", err)
			}
			if err := r.setMaster(ifi.Index, br.Index); err != nil {
				return err
			}
			if err := r.setUp(ifi.Index, true); err != nil {
				return err
			}
		}
		return r.setUp(br.Index, true)
	})
	if err != nil {
		return err
	}
	for _, n := range s.NS {
		if err := n.configure(); err != nil {
			return err
		}
	}
	for _, n := range s.NS {
		if err := n.waitRunning(waitCarrier); err != nil {
			return err
		}
	}
	return nil
}

// Close deletes the links and every namespace. It is idempotent.
func (s *Star) Close() error {
	s.once.Do(func() {
		if s.hub != "" {
			// Deleting the hub's links first frees the veth pairs even
			// if some socket or process still pins a member.
			err := do(s.hub, func() error {
				r, err := openRtnl()
				if err != nil {
					return err
				}
				defer r.Close()
				var err2 error
				for i := range s.NS {
					if ifi, err := net.InterfaceByName(fmt.Sprintf("ucgo-h%d", i)); err == nil {
						err2 = multierr.Append(err2, r.delLink(ifi.Index))
					}
				}
				if ifi, err := net.InterfaceByName(bridgeName); err == nil {
					err2 = multierr.Append(err2, r.delLink(ifi.Index))
				}
				return err2
			})
			s.err = multierr.Append(s.err, err)
			s.err = multierr.Append(s.err, remove(s.hub))
		}
		for _, n := range s.NS {
			if n.path != "" {
				s.err = multierr.Append(s.err, remove(n.path))
			}
		}
	})
	return s.err
}
