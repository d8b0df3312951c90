package main

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// barrierSpin bounds how long a barrier polls its connection before it
// blocks on it.
const barrierSpin = 20 * time.Millisecond

// spinReadable polls the connection, without blocking, until a byte can be
// read or barrierSpin has passed. A goroutine that blocks on the socket
// leaves the process without a running goroutine, and Go's sysmon thread
// goes to sleep; the read's wake-up restarts it at its shortest period
// (20 µs) for about a millisecond, and on a pinned CPU each of its
// wake-ups preempts the test: the warm-up and the measured phase of a
// small size, which follow the barrier at once, would run through that
// burst. Polling keeps the process running, so sysmon stays at the long
// period it reached during the previous size. Between sizes the peer
// arrives within microseconds (both sides end a size together), so the
// poll costs little CPU time; a peer later than barrierSpin is waited
// for by blocking.
func (t *tcpOOB) spinReadable() {
	if t.r.Buffered() > 0 {
		return
	}
	sc, ok := t.c.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	var b [1]byte
	deadline := time.Now().Add(barrierSpin)
	for {
		ready := false
		cerr := rc.Control(func(fd uintptr) {
			n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
			ready = err != unix.EAGAIN || n > 0
		})
		if cerr != nil || ready || time.Now().After(deadline) {
			return
		}
		if t.progress != nil {
			t.progress()
		}
	}
}
