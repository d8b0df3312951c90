package netns

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A new veth end reports IFF_RUNNING at once: the kernel derives it from
// the operational state, which starts out unknown and counts as up. The
// link watcher sets the real state later and only then attaches the
// end's transmit queue; until it does, everything sent on the end is
// dropped, the first ARP request among it, and ARP asks again only a
// second later. So readiness is the operational state IF_OPER_UP with
// carrier (IFF_LOWER_UP), not IFF_RUNNING alone.

// vethIndex is the interface index of the first end of a topology's
// k-th veth pair (k from 0); its peer gets the next one. The kernel's
// link watcher handles a veth end's carrier change at once only when the
// end's peer has another index than the end itself, and otherwise
// batches it, up to a second late, leaving the end unable to send until
// then. Left to choose, the kernel would give both ends of a pair index
// 2, the first free one in a new namespace. Indexes from 100 on, one pair
// for each k, are unique within a topology, whose namespaces are new,
// and clear of the low indexes the kernel gives loopbacks and bridges.
func vethIndex(k int) int32 { return int32(100 + 2*k) }

// ifOperUp is IF_OPER_UP of linux/if.h.
const ifOperUp = 6

// linkState is what rtnetlink reports of one link: its interface flags
// and its RFC 2863 operational state (IF_OPER_*).
type linkState struct {
	flags     uint32
	operstate uint8
}

// ready reports whether the link is up, has carrier and is operational.
func (s linkState) ready() bool {
	const want = unix.IFF_UP | unix.IFF_RUNNING | unix.IFF_LOWER_UP
	return s.flags&want == want && s.operstate == ifOperUp
}

func (s linkState) String() string {
	return fmt.Sprintf("flags %#x, operstate %d", s.flags, s.operstate)
}

// readLinkState asks rtnetlink of the calling thread's namespace for the
// state of the link index.
func readLinkState(index int) (linkState, error) {
	rib, err := syscall.NetlinkRIB(unix.RTM_GETLINK, unix.AF_UNSPEC)
	if err != nil {
		return linkState{}, fmt.Errorf("netlink dump links: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return linkState{}, fmt.Errorf("netlink parse: %w", err)
	}
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWLINK || len(m.Data) < unix.SizeofIfInfomsg ||
			int32(binary.NativeEndian.Uint32(m.Data[4:])) != int32(index) {
			continue
		}
		s := linkState{flags: binary.NativeEndian.Uint32(m.Data[8:])}
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			return linkState{}, fmt.Errorf("netlink parse link %d: %w", index, err)
		}
		for _, a := range attrs {
			if a.Attr.Type == unix.IFLA_OPERSTATE && len(a.Value) >= 1 {
				s.operstate = a.Value[0]
			}
		}
		return s, nil
	}
	return linkState{}, fmt.Errorf("netlink: no link %d", index)
}

// waitRunning waits until the namespace's veth end is up, has carrier
// and is operational, at most limit.
func (n *NS) waitRunning(limit time.Duration) error {
	return n.Do(func() error {
		deadline := time.Now().Add(limit)
		for {
			s, err := readLinkState(n.index)
			if err != nil {
				return fmt.Errorf("netns %s: %w", n.name, err)
			}
			if s.ready() {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("netns %s: %s not operational after %v (%v)", n.name, n.link, limit, s)
			}
			time.Sleep(time.Millisecond)
		}
	})
}

// proveGap is how long proveLink waits for a datagram before sending the
// next.
const proveGap = 20 * time.Millisecond

// proveLink sends UDP datagrams from A to B until one arrives, then from
// B to A, within limit in all. On a ready pair it takes one datagram
// each way; it leaves both neighbour entries resolved.
func (p *Pair) proveLink(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var ca, cb *net.UDPConn
	defer func() {
		for _, c := range []*net.UDPConn{ca, cb} {
			if c != nil {
				c.Close()
			}
		}
	}()
	for _, x := range []struct {
		n *NS
		c **net.UDPConn
	}{{p.A, &ca}, {p.B, &cb}} {
		err := x.n.Do(func() (err error) {
			*x.c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(x.n.Addr(), 0)))
			return err
		})
		if err != nil {
			return fmt.Errorf("netns %s: probe socket: %w", x.n.name, err)
		}
	}
	if err := prove(ca, cb, deadline); err != nil {
		return fmt.Errorf("netns: %s to %s within %v: %w", p.A.Addr(), p.B.Addr(), limit, err)
	}
	if err := prove(cb, ca, deadline); err != nil {
		return fmt.Errorf("netns: %s to %s within %v: %w", p.B.Addr(), p.A.Addr(), limit, err)
	}
	return nil
}

// errNoPath is returned when no probe datagram crossed a new link.
var errNoPath = errors.New("no probe datagram arrived")

// prove sends datagrams from tx to rx, proveGap apart, until one arrives
// or the deadline passes.
func prove(tx, rx *net.UDPConn, deadline time.Time) error {
	msg := []byte("ucgo netns probe")
	buf := make([]byte, 64)
	to := rx.LocalAddr().(*net.UDPAddr)
	for {
		if _, err := tx.WriteToUDP(msg, to); err != nil {
			return fmt.Errorf("send probe: %w", err)
		}
		wait := time.Now().Add(proveGap)
		if wait.After(deadline) {
			wait = deadline
		}
		rx.SetReadDeadline(wait)
		for {
			n, from, err := rx.ReadFromUDP(buf)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if err != nil {
				return fmt.Errorf("receive probe: %w", err)
			}
			if from.Port == tx.LocalAddr().(*net.UDPAddr).Port && string(buf[:n]) == string(msg) {
				return nil
			}
		}
		if !time.Now().Before(deadline) {
			return errNoPath
		}
	}
}
