package verbs

import (
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/fd"
	"github.com/ucgo/ucgo/internal/reuseport"
)

// bindSocket makes the device's socket, bound to local, without the
// options openSocket sets afterwards.
//
// With rocePort (local's port is 4791) and share, the socket joins the
// group of processes sharing local through internal/reuseport, whose eBPF
// program steers each packet to the process owning its destination QPN;
// the device then takes its QPNs from the member's range. When that is not
// possible (no eBPF or bpffs, not root, all slots taken, or the port held
// by a process that does not share it), or without share, the socket
// binds local's port alone if it is free and a port the kernel picks
// otherwise; peers then need that port in the device's address. Without
// rocePort, local is bound as it is.
func bindSocket(local netip.AddrPort, rocePort, share bool) (*socket, error) {
	s := &socket{}
	if rocePort && share {
		m, err := reuseport.Listen(local)
		if err == nil {
			n, err := unix.FcntlInt(uintptr(m.FD()), unix.F_DUPFD_CLOEXEC, 0)
			if err != nil {
				return nil, errors.Join(fmt.Errorf("port sharing: dup: %w", err), m.Close())
			}
			s.fd, s.port, s.member = fd.New(n), local.Port(), m
			return s, nil
		}
		s.shareErr = err
	}
	n, err := bindUDP(local)
	if rocePort && errors.Is(err, unix.EADDRINUSE) {
		n, err = bindUDP(netip.AddrPortFrom(local.Addr(), 0))
	}
	if err != nil {
		if s.shareErr != nil {
			err = fmt.Errorf("%w (port sharing: %w)", err, s.shareErr)
		}
		return nil, err
	}
	s.fd = fd.New(n)
	sn, err := unix.Getsockname(n)
	if err != nil {
		s.fd.Close()
		return nil, fmt.Errorf("getsockname: %w", err)
	}
	s.port = uint16(sn.(*unix.SockaddrInet4).Port)
	return s, nil
}

// bindUDP returns a non-blocking UDP socket bound to local.
func bindUDP(local netip.AddrPort) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	sa := &unix.SockaddrInet4{Port: int(local.Port()), Addr: local.Addr().As4()}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind %s: %w", local, err)
	}
	return fd, nil
}
