package netns

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/fd"
)

// rtnl is a NETLINK_ROUTE socket. It talks to the network namespace of the
// thread that created it, whatever thread uses it later.
type rtnl struct {
	fd  *fd.FD
	seq uint32
}

func openRtnl() (*rtnl, error) {
	s, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	if err := unix.Bind(s, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(s)
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	return &rtnl{fd: fd.New(s)}, nil
}

func (r *rtnl) Close() error { return r.fd.Close() }

// msg builds one netlink request: header, fixed part, attributes.
type msg struct {
	b      []byte
	nested []int // offsets of open nested attributes
}

func newMsg(typ, flags uint16, fixed []byte) *msg {
	m := &msg{b: make([]byte, unix.NLMSG_HDRLEN, 256)}
	binary.NativeEndian.PutUint16(m.b[4:], typ)
	binary.NativeEndian.PutUint16(m.b[6:], flags|unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	m.b = append(m.b, fixed...)
	m.align()
	return m
}

func (m *msg) align() {
	for len(m.b)%4 != 0 {
		m.b = append(m.b, 0)
	}
}

func (m *msg) attr(typ uint16, data []byte) {
	var h [4]byte
	binary.NativeEndian.PutUint16(h[0:], uint16(4+len(data)))
	binary.NativeEndian.PutUint16(h[2:], typ)
	m.b = append(m.b, h[:]...)
	m.b = append(m.b, data...)
	m.align()
}

func (m *msg) u32(typ uint16, v uint32) {
	m.attr(typ, binary.NativeEndian.AppendUint32(nil, v))
}

func (m *msg) str(typ uint16, s string) {
	m.attr(typ, append([]byte(s), 0))
}

func (m *msg) begin(typ uint16) {
	m.nested = append(m.nested, len(m.b))
	m.attr(typ|unix.NLA_F_NESTED, nil)
}

// raw appends bytes that are part of the current attribute's payload.
func (m *msg) raw(b []byte) {
	m.b = append(m.b, b...)
	m.align()
}

func (m *msg) end() {
	off := m.nested[len(m.nested)-1]
	m.nested = m.nested[:len(m.nested)-1]
	binary.NativeEndian.PutUint16(m.b[off:], uint16(len(m.b)-off))
}

// do sends the request and waits for its acknowledgement.
func (r *rtnl) do(m *msg) error {
	r.seq++
	binary.NativeEndian.PutUint32(m.b[0:], uint32(len(m.b)))
	binary.NativeEndian.PutUint32(m.b[8:], r.seq)
	if err := unix.Sendto(r.fd.Int(), m.b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink send: %w", err)
	}
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(r.fd.Int(), buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("netlink recv: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("netlink parse: %w", err)
		}
		for _, nm := range msgs {
			if nm.Header.Seq != r.seq {
				continue
			}
			if nm.Header.Type != unix.NLMSG_ERROR {
				continue
			}
			if len(nm.Data) < 4 {
				return fmt.Errorf("netlink: short error message")
			}
			if e := int32(binary.NativeEndian.Uint32(nm.Data)); e != 0 {
				return syscall.Errno(-e)
			}
			return nil
		}
	}
}

func ifinfomsg(index int32, flags, change uint32) []byte {
	b := make([]byte, unix.SizeofIfInfomsg)
	b[0] = unix.AF_UNSPEC
	binary.NativeEndian.PutUint32(b[4:], uint32(index))
	binary.NativeEndian.PutUint32(b[8:], flags)
	binary.NativeEndian.PutUint32(b[12:], change)
	return b
}

// vethInfoPeer is VETH_INFO_PEER from linux/veth.h.
const vethInfoPeer = 1

// addVeth creates a veth pair: name in the rtnl socket's namespace, peer
// directly in the namespace open at peerNS, with the interface indexes
// vethIndex(k) and vethIndex(k)+1 (see vethIndex).
func (r *rtnl) addVeth(name, peer string, peerNS int, mtu int, k int) error {
	index := vethIndex(k)
	m := newMsg(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL, ifinfomsg(index, 0, 0))
	m.str(unix.IFLA_IFNAME, name)
	m.u32(unix.IFLA_MTU, uint32(mtu))
	m.begin(unix.IFLA_LINKINFO)
	m.str(unix.IFLA_INFO_KIND, "veth")
	m.begin(unix.IFLA_INFO_DATA)
	m.begin(vethInfoPeer)
	m.raw(ifinfomsg(index+1, 0, 0))
	m.str(unix.IFLA_IFNAME, peer)
	m.u32(unix.IFLA_MTU, uint32(mtu))
	m.u32(unix.IFLA_NET_NS_FD, uint32(peerNS))
	m.end()
	m.end()
	m.end()
	if err := r.do(m); err != nil {
		return fmt.Errorf("create veth %s/%s: %w", name, peer, err)
	}
	return nil
}

func (r *rtnl) setUp(index int, up bool) error {
	var flags uint32
	if up {
		flags = unix.IFF_UP
	}
	m := newMsg(unix.RTM_NEWLINK, 0, ifinfomsg(int32(index), flags, unix.IFF_UP))
	if err := r.do(m); err != nil {
		return fmt.Errorf("set link %d up=%v: %w", index, up, err)
	}
	return nil
}

func (r *rtnl) delLink(index int) error {
	m := newMsg(unix.RTM_DELLINK, 0, ifinfomsg(int32(index), 0, 0))
	if err := r.do(m); err != nil {
		return fmt.Errorf("delete link %d: %w", index, err)
	}
	return nil
}

func (r *rtnl) addAddr(index int, p netip.Prefix) error {
	fam := byte(unix.AF_INET)
	if p.Addr().Is6() {
		fam = unix.AF_INET6
	}
	fixed := make([]byte, unix.SizeofIfAddrmsg)
	fixed[0] = fam
	fixed[1] = byte(p.Bits())
	binary.NativeEndian.PutUint32(fixed[4:], uint32(index))
	m := newMsg(unix.RTM_NEWADDR, unix.NLM_F_CREATE|unix.NLM_F_EXCL, fixed)
	a := p.Addr().AsSlice()
	m.attr(unix.IFA_LOCAL, a)
	m.attr(unix.IFA_ADDRESS, a)
	if err := r.do(m); err != nil {
		return fmt.Errorf("add address %v to link %d: %w", p, index, err)
	}
	return nil
}

// addBridge creates a bridge (STP off, so ports forward at once) in the
// rtnl socket's namespace.
func (r *rtnl) addBridge(name string, mtu int) error {
	m := newMsg(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL, ifinfomsg(0, 0, 0))
	m.str(unix.IFLA_IFNAME, name)
	m.u32(unix.IFLA_MTU, uint32(mtu))
	m.begin(unix.IFLA_LINKINFO)
	m.str(unix.IFLA_INFO_KIND, "bridge")
	m.end()
	if err := r.do(m); err != nil {
		return fmt.Errorf("create bridge %s: %w", name, err)
	}
	return nil
}

// setMaster makes link index a port of the bridge master.
func (r *rtnl) setMaster(index, master int) error {
	m := newMsg(unix.RTM_NEWLINK, 0, ifinfomsg(int32(index), 0, 0))
	m.u32(unix.IFLA_MASTER, uint32(master))
	if err := r.do(m); err != nil {
		return fmt.Errorf("set master of link %d to %d: %w", index, master, err)
	}
	return nil
}
