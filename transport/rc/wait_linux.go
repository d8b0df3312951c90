package rc

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/fd"
)

func newEventFD() (*fd.FD, error) {
	n, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	return fd.New(n), nil
}

func signalEventFD(fd int) {
	var one = [8]byte{1}
	unix.Write(fd, one[:])
}

func drainEventFD(fd int) {
	var b [8]byte
	unix.Read(fd, b[:])
}

// pollFDs sleeps until one of fds is readable.
func pollFDs(fds ...int) error {
	pfd := make([]unix.PollFd, len(fds))
	for i, fd := range fds {
		pfd[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	}
	for {
		_, err := unix.Poll(pfd, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("rc: poll: %w", err)
		}
		return nil
	}
}
