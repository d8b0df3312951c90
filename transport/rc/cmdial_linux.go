package rc

import (
	"fmt"
	"net"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// cmStartDial creates a TCP socket in the calling thread's network
// namespace and starts a non-blocking connect to peer. It returns the
// connection at once; the connect completes in the background, and the
// first write waits for it (or fails with its error). Creating the socket
// here, not in the goroutine that then waits, keeps the namespace the
// caller dials from.
func cmStartDial(peer netip.AddrPort) (*net.TCPConn, error) {
	ip := peer.Addr().Unmap()
	var sa unix.Sockaddr
	family := unix.AF_INET
	if ip.Is4() {
		sa = &unix.SockaddrInet4{Port: int(peer.Port()), Addr: ip.As4()}
	} else {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(peer.Port()), Addr: ip.As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	if err := unix.Connect(fd, sa); err != nil && err != unix.EINPROGRESS {
		unix.Close(fd)
		return nil, fmt.Errorf("connect %s: %w", peer, err)
	}
	f := os.NewFile(uintptr(fd), "rc-cm-dial")
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", peer, err)
	}
	return nc.(*net.TCPConn), nil
}
