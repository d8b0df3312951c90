package verbs

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// watchdogTimer is what the background goroutine sleeps on: a timerfd
// and, while it watches for packets nobody else receives, the device's
// socket, both in an epoll set that the goroutine waits for in Go's
// network poller. Progress pushes the timer's expiry back (at most every
// half interval, one timerfd_settime), so while the owner polls the timer
// never expires, the socket is not in the set, and the goroutine never
// wakes: no runtime timer fires, no idle thread leaves epoll_wait to run
// one on a CPU where a thread spins in Progress, no packet wakes anyone.
// A runtime timer would not do: moving one later leaves its old expiry
// in the heap, and an idle thread still wakes at it.
type watchdogTimer struct {
	f    *os.File // the epoll set, in the poller; Close wakes a waiting wait
	tfd  int      // the timerfd, for arm under the engine mutex
	sock int      // the device's socket
	in   bool     // the socket is in the set
}

// Reasons a wait returns.
const (
	wakeTimer    = 1 << iota // the timer expired
	wakeReadable             // the socket has packets (while watched)
)

func newWatchdogTimer(sock int) (*watchdogTimer, error) {
	tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		unix.Close(tfd)
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, tfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(tfd)}); err != nil {
		unix.Close(ep)
		unix.Close(tfd)
		return nil, fmt.Errorf("epoll_ctl timerfd: %w", err)
	}
	// Non-blocking, so that os.NewFile puts it in the poller.
	if err := unix.SetNonblock(ep, true); err != nil {
		unix.Close(ep)
		unix.Close(tfd)
		return nil, fmt.Errorf("epoll set non-blocking: %w", err)
	}
	f := os.NewFile(uintptr(ep), "watchdog-epoll")
	// Deadlines work only on files in the poller: a blocking wait could
	// not be woken by Close.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		unix.Close(tfd)
		return nil, fmt.Errorf("epoll set not pollable: %w", err)
	}
	return &watchdogTimer{f: f, tfd: tfd, sock: sock}, nil
}

// arm makes the timer expire after d (d > 0), replacing any earlier
// expiry; disarm (d 0) stops it. The caller holds the engine mutex of a
// device that is not closed, so the descriptor is still open.
func (w *watchdogTimer) arm(d time.Duration) {
	setTimerfd(w.tfd, d)
}

// armSafe is arm for a caller without the engine mutex: it does nothing
// once Close has run.
func (w *watchdogTimer) armSafe(d time.Duration) {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(uintptr) { setTimerfd(w.tfd, d) })
}

// setTimerfd arms fd to expire after d, or disarms it for d 0.
func setTimerfd(fd int, d time.Duration) {
	var spec unix.ItimerSpec
	if d != 0 {
		spec.Value = unix.NsecToTimespec(int64(max(d, 1)))
	}
	_ = timerfdSettime(fd, &spec)
}

// watch puts the socket into the set (on) or takes it out. Only the
// background goroutine calls it, before Close has closed the socket.
func (w *watchdogTimer) watch(on bool) {
	if on == w.in {
		return
	}
	rc, err := w.f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(ep uintptr) {
		var err error
		if on {
			err = unix.EpollCtl(int(ep), unix.EPOLL_CTL_ADD, w.sock, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(w.sock)})
		} else {
			err = unix.EpollCtl(int(ep), unix.EPOLL_CTL_DEL, w.sock, nil)
		}
		if err == nil {
			w.in = on
		}
	})
}

// wait blocks in the network poller until the timer expires or, while
// the socket is watched, packets wait in it, and returns why (wakeTimer,
// wakeReadable); 0 once Close has run (also if the poller fails, which
// it does not for an epoll set). A re-arm before the timer is read
// resets its expiration count, and the wait goes on.
func (w *watchdogTimer) wait() int {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return 0
	}
	why := 0
	err = rc.Read(func(ep uintptr) bool {
		var evs [2]unix.EpollEvent
		n, err := unix.EpollWait(int(ep), evs[:], 0)
		if err != nil && err != unix.EINTR {
			// Never expected: let the caller look at the engine rather
			// than spin here.
			why = wakeTimer
			return true
		}
		for _, ev := range evs[:max(n, 0)] {
			switch int(ev.Fd) {
			case w.tfd:
				var b [8]byte
				if _, err := unix.Read(w.tfd, b[:]); err != unix.EAGAIN {
					why |= wakeTimer
				}
			case w.sock:
				why |= wakeReadable
			}
		}
		return why != 0
	})
	if err != nil {
		return 0
	}
	return why
}

// Close closes the set and the timer and wakes a wait.
func (w *watchdogTimer) Close() error {
	err := w.f.Close()
	unix.Close(w.tfd)
	return err
}
