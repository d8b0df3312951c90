package shm

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/uct"
)

// The peer watcher: each endpoint waits on a pidfd of the peer process
// and fails itself when that process exits.

// watchPeer waits for the peer's exit (background, not on the hot path).
// It signals done before reporting a failure, so that the error handler
// may close the endpoint.
//
// It waits in Go's network poller, where a goroutine costs nothing until
// the pidfd becomes readable. A loop of blocking polls with a timeout
// would cost more than its system calls: the runtime takes the P of a
// goroutine blocked in a system call away after 20 µs, which also keeps
// sysmon polling every 20 µs, and every sysmon wake-up preempts a thread
// that spins in Progress when the CPUs are all busy (two processes in a
// ping-pong on two CPUs): stalls of tens of µs, many times a second.
func (ep *Endpoint) watchPeer() {
	failed := false
	defer func() {
		close(ep.done)
		if failed {
			ep.peerFailed()
		}
	}()
	if ep.watch != nil {
		rc, err := ep.watch.SyscallConn()
		for err == nil {
			select {
			case <-ep.stop:
				return
			default:
			}
			err = rc.Read(func(uintptr) bool {
				failed = ep.exited()
				return failed
			})
			if failed {
				return
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				err = nil // stopWatch: check stop
			}
		}
	}
	// Close waits for this goroutine (stopWatch) before it closes pidfd.
	fds := []unix.PollFd{{Fd: int32(ep.pidfd.Int()), Events: unix.POLLIN}}
	for {
		select {
		case <-ep.stop:
			return
		default:
		}
		n, err := unix.Poll(fds, 20)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if n > 0 && fds[0].Revents != 0 {
			failed = true
			return
		}
	}
}

func (ep *Endpoint) peerFailed() {
	ep.fail(uct.EventPeerFailed, uct.NewOpError(transportName, "peer", ep.name, uct.ErrPeerFailed, fmt.Errorf("process %d exited", ep.peer.PID)))
}

// peerClosed puts the endpoint in error state after the peer closed its iface.
func (ep *Endpoint) peerClosed() {
	ep.fail(uct.EventEndpointError, uct.NewOpError(transportName, "peer", ep.name, uct.ErrConnectionReset, errors.New("peer iface closed")))
}

// exited reports whether the peer process has exited (zombies included),
// from its pidfd.
func (ep *Endpoint) exited() bool {
	exited := false
	_ = ep.pidfd.Do(func(n int) error {
		fds := []unix.PollFd{{Fd: int32(n), Events: unix.POLLIN}}
		k, err := unix.Poll(fds, 0)
		exited = err == nil && k > 0 && fds[0].Revents != 0
		return nil
	})
	return exited
}

// stopWatch stops the peer watcher and waits for it; idempotent.
func (ep *Endpoint) stopWatch() {
	ep.stopped.Do(func() {
		close(ep.stop)
		if ep.watch != nil {
			ep.watch.SetReadDeadline(time.Unix(1, 0)) // wake the watcher
		}
	})
	<-ep.done
}
