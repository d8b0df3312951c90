package ucp

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/uct"
)

// waitAll sleeps until one of wis has an event, ctx ends or slice has
// passed, in one poll(2) of all their descriptors, when every one of them
// sleeps in poll (uct.FDWaiter): a packet on one rail then wakes the
// worker while it sleeps for the other. It reports false, not having
// slept, when one of them does not.
func waitAll(ctx context.Context, wis []*wiface, slice time.Duration) bool {
	var fw [8]uct.FDWaiter
	if len(wis) > len(fw) {
		return false
	}
	for i, wi := range wis {
		f, ok := wi.it.(uct.FDWaiter)
		if !ok {
			return false
		}
		fw[i] = f
	}
	var buf [3 * len(fw)]int
	fds := buf[:0]
	for _, f := range fw[:len(wis)] {
		fds = f.WaitFDs(fds)
	}
	stop := context.AfterFunc(ctx, func() {
		for _, wi := range wis {
			wi.it.Wake()
		}
	})
	defer stop()
	var pbuf [len(buf)]unix.PollFd
	pfd := pbuf[:0]
	if len(fds) > len(pbuf) {
		pfd = make([]unix.PollFd, 0, len(fds))
	}
	pfd = pfd[:len(fds)]
	for i, fd := range fds {
		pfd[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	}
	ms := int(slice / time.Millisecond)
	if dl, ok := ctx.Deadline(); ok {
		ms = min(ms, max(0, int(time.Until(dl)/time.Millisecond)+1))
	}
	for {
		_, err := unix.Poll(pfd, ms)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	for _, f := range fw[:len(wis)] {
		f.WaitDone()
	}
	return true
}
