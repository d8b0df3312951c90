package verbs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"

	"go.uber.org/multierr"
	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/fd"
	"github.com/ucgo/ucgo/internal/reuseport"
)

// socket is the device's non-blocking UDP socket.
type socket struct {
	fd   *fd.FD
	port uint16
	gso  bool
	gro  bool // UDP GRO is on (gro_linux.go)
	// member is the socket's place in the group sharing the RoCEv2 port
	// (nil when the port is not shared); shareErr says why not.
	member   *reuseport.Member
	shareErr error
}

func openSocket(local netip.AddrPort, bufSize int, gso, rocePort, share bool) (*socket, error) {
	s, err := bindSocket(local, rocePort, share)
	if err != nil {
		return nil, err
	}
	fd := s.fd.Int()
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, bufSize); err != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, bufSize)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, bufSize); err != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, bufSize)
	}
	// DF set and IP ID 0 on an unconnected socket: what the ICRC assumes.
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO); err != nil {
		s.close()
		return nil, fmt.Errorf("IP_MTU_DISCOVER: %w", err)
	}
	if gso {
		_, err := unix.GetsockoptInt(fd, unix.SOL_UDP, unix.UDP_SEGMENT)
		s.gso = err == nil
		s.gro = s.member == nil && enableGRO(fd)
	}
	return s, nil
}

func (s *socket) close() error {
	if s.fd.Int() < 0 {
		return nil
	}
	// The descriptor first: the member's Close frees the slot and removes
	// the group's pins only once the socket is gone.
	err := s.fd.Close()
	if s.member != nil {
		err = multierr.Append(err, s.member.Close())
	}
	return err
}

func sockaddrOf(a netip.AddrPort) unix.RawSockaddrInet4 {
	sa := unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: a.Addr().Unmap().As4()}
	p := a.Port()
	sa.Port = p>>8 | p<<8 // network byte order in memory
	return sa
}

func addrPortOf(sa *unix.RawSockaddrInet4) netip.AddrPort {
	p := sa.Port>>8 | sa.Port<<8
	return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), p)
}

const (
	batchLen   = 64
	rxBufSize  = 4096 + 256
	gsoMaxSegs = 64
	gsoMaxLen  = 65507 // largest UDP payload
)

// txBatch collects packets and sends them with one sendmmsg. Consecutive
// packets of equal size to one destination QP share a message and go out
// with UDP_SEGMENT (GSO) when the socket supports it. Packets for
// different QPs never share one: a receiver takes a GSO datagram's
// segments into the socket its first segment was steered to, and with
// port 4791 shared between processes (SO_REUSEPORT steering by
// destination QP) another QP's packets would reach the wrong process.
type txBatch struct {
	gso  bool
	msgs []mmsghdr
	iov  []unix.Iovec
	bufs [][]byte
	dst  []unix.RawSockaddrInet4
	dap  []netip.AddrPort
	dqp  []uint32 // destination QP of the message's packets
	ctrl [][]byte
	seg  []int  // segment size of the message's packets
	nseg []int  // packets in the message
	mlen []int  // bytes in the message, payloads sent by reference included
	shut []bool // a short last segment was added: no more
	n    int    // messages in use
	// Payloads sent from where they lie, not copied (see txref_linux.go), and
	// the iovecs of the messages that carry them.
	refs  []txRef
	iovs  []unix.Iovec
	bytes int // bytes in the batch
}

func (t *txBatch) init(gso bool) {
	t.gso = gso
	t.msgs = make([]mmsghdr, batchLen)
	t.iov = make([]unix.Iovec, batchLen)
	t.bufs = make([][]byte, batchLen)
	size := rxBufSize
	if gso {
		size = gsoMaxLen
	}
	for i := range t.bufs {
		t.bufs[i] = make([]byte, 0, size)
	}
	t.dst = make([]unix.RawSockaddrInet4, batchLen)
	t.dap = make([]netip.AddrPort, batchLen)
	t.dqp = make([]uint32, batchLen)
	t.ctrl = make([][]byte, batchLen)
	for i := range t.ctrl {
		t.ctrl[i] = make([]byte, unix.CmsgSpace(2))
	}
	t.seg = make([]int, batchLen)
	t.nseg = make([]int, batchLen)
	t.mlen = make([]int, batchLen)
	t.shut = make([]bool, batchLen)
	t.initRefs()
}

// slot returns the buffer to append a packet of wireLen bytes for QP dqp
// at dst to; the caller appends exactly wireLen bytes. It returns false
// when the batch is full (flush first).
func (t *txBatch) slot(dst netip.AddrPort, dqp uint32, wireLen int) (int, bool) {
	if t.joins(dst, dqp, wireLen) {
		i := t.n - 1
		if wireLen < t.seg[i] {
			t.shut[i] = true
		}
		t.nseg[i]++
		t.mlen[i] += wireLen
		t.bytes += wireLen
		return i, true
	}
	if t.n == batchLen {
		return 0, false
	}
	i := t.n
	t.n++
	t.bufs[i] = t.bufs[i][:0]
	t.dap[i] = dst
	t.dqp[i] = dqp
	t.dst[i] = sockaddrOf(dst)
	t.seg[i] = wireLen
	t.nseg[i] = 1
	t.mlen[i] = wireLen
	t.shut[i] = false
	t.bytes += wireLen
	return i, true
}

// joins reports whether a packet of wireLen bytes for QP dqp at dst
// joins the batch's last message as one more GSO segment.
func (t *txBatch) joins(dst netip.AddrPort, dqp uint32, wireLen int) bool {
	if !t.gso || t.n == 0 {
		return false
	}
	i := t.n - 1
	return t.dap[i] == dst && t.dqp[i] == dqp && !t.shut[i] && t.nseg[i] < gsoMaxSegs &&
		t.mlen[i]+wireLen <= gsoMaxLen && wireLen <= t.seg[i]
}

// flush sends the batch. Errors other than a full socket buffer drop
// the message concerned; a full buffer is waited out for a short while.
func (t *txBatch) flush(fd int, ctr *Counters) {
	if t.n == 0 {
		return
	}
	iv, r := t.iovs[:0], 0
	for i := 0; i < t.n; i++ {
		var ctrl []byte
		if t.nseg[i] > 1 {
			putSegmentCmsg(t.ctrl[i], uint16(t.seg[i]))
			ctrl = t.ctrl[i]
		}
		if r < len(t.refs) && t.refs[r].msg == i {
			start := len(iv)
			iv, r = t.appendIovecs(iv, i, r)
			setMsgIov(&t.msgs[i], iv[start:], &t.dst[i], ctrl)
			continue
		}
		setMsg(&t.msgs[i], &t.iov[i], t.bufs[i], &t.dst[i], ctrl)
	}
	sent := 0
	deadline := time.Time{}
	for sent < t.n {
		var k int
		var err error
		if sent == t.n-1 {
			k, err = sendmsg(fd, &t.msgs[sent], t.small(sent))
		} else {
			k, err = sendmmsg(fd, t.msgs[sent:t.n], t.small(sent))
		}
		ctr.TxCalls++
		if err == nil {
			for i := sent; i < sent+k; i++ {
				ctr.TxPackets += uint64(t.nseg[i])
				ctr.TxDatagrams++
			}
			sent += k
			continue
		}
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN || err == unix.ENOBUFS {
			if deadline.IsZero() {
				deadline = time.Now().Add(20 * time.Millisecond)
			} else if time.Now().After(deadline) {
				break
			}
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			_, _ = unix.Poll(pfd, 1)
			continue
		}
		// Unreachable, link down, message too long: drop this one.
		ctr.TxDropped += uint64(t.nseg[sent])
		sent++
	}
	for i := sent; i < t.n; i++ {
		ctr.TxDropped += uint64(t.nseg[i])
	}
	t.n = 0
	t.bytes = 0
	t.dropRefs()
}

// small reports whether the messages from i on are few and short
// enough (rawSendMax messages, rawSendBytes bytes: a tag message of a
// few KiB and its ACK) for a raw system call.
func (t *txBatch) small(i int) bool {
	if t.n-i > rawSendMax {
		return false
	}
	bytes := 0
	for ; i < t.n; i++ {
		bytes += t.mlen[i]
	}
	return bytes <= rawSendBytes
}

// rxBatch receives one datagram with recvmsg, or during a burst up to
// batchLen with one recvmmsg (rxsingle_linux.go); with GRO
// a datagram may be several packets coalesced (see gro_linux.go).
type rxBatch struct {
	gro  bool
	msgs []mmsghdr
	iov  []unix.Iovec
	bufs [][]byte
	src  []unix.RawSockaddrInet4
	ctrl [][]byte // UDP_GRO control messages (GRO only)
	used int      // headers the last recv filled: only they need resetting
	// streak counts the consecutive receives that found data; it picks
	// recvmsg or recvmmsg (rxsingle_linux.go).
	streak int
}

func (r *rxBatch) init(gro bool) {
	r.gro = gro
	r.msgs = make([]mmsghdr, batchLen)
	r.iov = make([]unix.Iovec, batchLen)
	r.bufs = make([][]byte, batchLen)
	r.src = make([]unix.RawSockaddrInet4, batchLen)
	size := rxBufSize
	if gro {
		size = groMaxLen
		r.ctrl = make([][]byte, batchLen)
		for i := range r.ctrl {
			r.ctrl[i] = make([]byte, groCtrlLen)
		}
	}
	for i := range r.bufs {
		r.bufs[i] = make([]byte, size)
	}
	r.used = batchLen
}

// recv returns the number of packets received (0 if none waited) and the
// error of the receive call (EAGAIN if none waited).
func (r *rxBatch) recv(fd int) (int, error) {
	for i := range r.used {
		var ctrl []byte
		if r.gro {
			ctrl = r.ctrl[i]
		}
		setMsg(&r.msgs[i], &r.iov[i], r.bufs[i], &r.src[i], ctrl)
	}
	r.used = 0
	batched := r.batched()
	for {
		var n int
		var err error
		if batched {
			n, err = recvmmsg(fd, r.msgs)
		} else {
			n, err = recvmsg(fd, &r.msgs[0])
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			r.account(0, batched)
			return 0, err
		}
		r.account(n, batched)
		r.used = n
		return n, nil
	}
}

// packet returns packet i of the last recv and its source.
func (r *rxBatch) packet(i int) ([]byte, netip.AddrPort) {
	n := int(r.msgs[i].len)
	if r.msgs[i].hdr.Flags&unix.MSG_TRUNC != 0 {
		n = 0
	}
	return r.bufs[i][:n], addrPortOf(&r.src[i])
}

// segSize returns the segment size of datagram i of the last recv if
// GRO coalesced several packets into it, else 0. A control message that
// does not parse counts as none: the datagram is then handled as one
// packet, and fails its ICRC check if it was more.
func (r *rxBatch) segSize(i int) int {
	if !r.gro {
		return 0
	}
	h := &r.msgs[i].hdr
	n := int(h.Controllen)
	if n > len(r.ctrl[i]) || h.Flags&unix.MSG_CTRUNC != 0 {
		return 0
	}
	seg, err := groSegSize(r.ctrl[i][:n])
	if err != nil {
		return 0
	}
	return seg
}

func newEventFD() (int, error) {
	return unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
}

func eventFDSignal(fd int) {
	var one = [8]byte{1}
	_, _ = unix.Write(fd, one[:])
}

func eventFDDrain(fd int) {
	var b [8]byte
	_, _ = unix.Read(fd, b[:])
}

// pollFds waits until one of fds is readable or timeout passes.
func pollFds(fds []int, timeout time.Duration) {
	var p [2]unix.PollFd
	pf := p[:0]
	for _, fd := range fds {
		pf = append(pf, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	ms := int((timeout + time.Millisecond - 1) / time.Millisecond)
	if ms < 0 {
		ms = 0
	}
	_, _ = unix.Poll(pf, ms)
}

// linkWatch follows a netdev's state over rtnetlink (RTM_NEWLINK and
// RTM_DELLINK on the RTMGRP_LINK group) and its addresses (RTM_NEWADDR and
// RTM_DELADDR, IPv4 and IPv6) on a goroutine of its own.
type linkWatch struct {
	f    *os.File
	wg   sync.WaitGroup
	once sync.Once
	err  error
	// addr, if set, is called when an address of the netdev is added or
	// removed (the port's GID table changed).
	addr func()
}

// watchLink reads the link's current state (up and running), passes it
// to initial and then starts a goroutine that calls fn on every change,
// so fn never runs before initial has returned.
func watchLink(index int, initial, fn func(up bool), addr func()) (*linkWatch, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	groups := uint32(unix.RTMGRP_LINK | unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: groups}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	up, err := linkUp(index)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	initial(up)
	w := &linkWatch{f: os.NewFile(uintptr(fd), "rtnetlink"), addr: addr}
	w.wg.Add(1)
	go w.run(index, up, fn)
	return w, nil
}

func linkUp(index int) (bool, error) {
	ifi, err := interfaceFlags(index)
	if err != nil {
		return false, err
	}
	return ifi&unix.IFF_UP != 0 && ifi&unix.IFF_RUNNING != 0, nil
}

func interfaceFlags(index int) (uint32, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	name, err := indexName(index)
	if err != nil {
		return 0, err
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return 0, fmt.Errorf("SIOCGIFFLAGS %s: %w", name, err)
	}
	return uint32(ifr.Uint16()), nil
}

func indexName(index int) (string, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("")
	if err != nil {
		return "", err
	}
	ifr.SetUint32(uint32(index))
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFNAME, ifr); err != nil {
		return "", fmt.Errorf("SIOCGIFNAME %d: %w", index, err)
	}
	return ifr.Name(), nil
}

func (w *linkWatch) run(index int, up bool, fn func(bool)) {
	defer w.wg.Done()
	buf := make([]byte, 1<<16)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			if errors.Is(err, syscall.ENOBUFS) {
				// Lost messages: re-read the state.
				if now, err := linkUp(index); err == nil && now != up {
					up = now
					fn(up)
				}
				continue
			}
			return
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			continue
		}
		for _, m := range msgs {
			if m.Header.Type == unix.RTM_NEWADDR || m.Header.Type == unix.RTM_DELADDR {
				// ifaddrmsg: family, prefix length, flags, scope, index
				if len(m.Data) >= unix.SizeofIfAddrmsg && int(binary.NativeEndian.Uint32(m.Data[4:])) == index && w.addr != nil {
					w.addr()
				}
				continue
			}
			if m.Header.Type != unix.RTM_NEWLINK && m.Header.Type != unix.RTM_DELLINK {
				continue
			}
			if len(m.Data) < unix.SizeofIfInfomsg {
				continue
			}
			idx := int(int32(binary.NativeEndian.Uint32(m.Data[4:])))
			if idx != index {
				continue
			}
			flags := binary.NativeEndian.Uint32(m.Data[8:])
			now := m.Header.Type == unix.RTM_NEWLINK && flags&unix.IFF_UP != 0 && flags&unix.IFF_RUNNING != 0
			if now != up {
				up = now
				fn(up)
			}
		}
	}
}

func (w *linkWatch) close() error {
	w.once.Do(func() {
		w.err = w.f.Close()
		w.wg.Wait()
	})
	return w.err
}
