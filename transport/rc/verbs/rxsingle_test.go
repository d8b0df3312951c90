package verbs

import (
	"bytes"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// udpPair returns a non-blocking UDP socket bound on 127.0.0.1 and the
// sockaddr of another one that sends to it, both closed at the end.
func udpPair(t *testing.T) (rxFd, txFd int, to unix.Sockaddr) {
	t.Helper()
	open := func() int {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
		return fd
	}
	rxFd, txFd = open(), open()
	sa, err := unix.Getsockname(rxFd)
	if err != nil {
		t.Fatal(err)
	}
	return rxFd, txFd, sa
}

// TestRxSingleUntilBurst checks the receive stage's choice of system
// call: with ten datagrams waiting, the first polls take one datagram
// each (recvmsg, the ping-pong case), the poll after rxBatchStreak polls
// with data takes the rest in one batch (recvmmsg), and after an empty
// poll the next datagram is taken alone again. Every datagram arrives
// whole, in order, with its source address.
func TestRxSingleUntilBurst(t *testing.T) {
	rxFd, txFd, to := udpPair(t)
	src, err := unix.Getsockname(txFd)
	if err != nil {
		t.Fatal(err)
	}
	srcPort := src.(*unix.SockaddrInet4).Port
	var r rxBatch
	r.init(false)
	send := func(k int) {
		t.Helper()
		if err := unix.Sendto(txFd, bytes.Repeat([]byte{byte(k)}, 100+k), 0, to); err != nil {
			t.Fatal(err)
		}
	}
	for k := range 10 {
		send(k)
	}
	next := 0
	var counts []int
	for len(counts) < 10 && next < 10 {
		n, err := r.recv(rxFd)
		if err != nil {
			t.Fatalf("poll %d: %v", len(counts), err)
		}
		counts = append(counts, n)
		for i := range n {
			b, from := r.packet(i)
			if len(b) != 100+next || b[0] != byte(next) {
				t.Fatalf("datagram %d: %d bytes starting %d", next, len(b), b[0])
			}
			if int(from.Port()) != srcPort || from.Addr().String() != "127.0.0.1" {
				t.Fatalf("datagram %d from %v, want 127.0.0.1:%d", next, from, srcPort)
			}
			next++
		}
	}
	want := []int{1, 1, 1, 7}
	if len(counts) != len(want) || counts[0] != 1 || counts[1] != 1 || counts[2] != 1 || counts[3] != 7 {
		t.Fatalf("datagrams per poll %v, want %v", counts, want)
	}
	if n, err := r.recv(rxFd); n != 0 || !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("empty poll: %d, %v; want 0, EAGAIN", n, err)
	}
	send(20)
	send(21)
	if n, err := r.recv(rxFd); n != 1 || err != nil {
		t.Fatalf("poll after an empty one: %d datagrams, %v; want 1", n, err)
	}
	if b, _ := r.packet(0); len(b) != 120 {
		t.Fatalf("datagram of %d bytes, want 120", len(b))
	}
}
