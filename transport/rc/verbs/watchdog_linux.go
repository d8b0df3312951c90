package verbs

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// watchdogTimer is the background goroutine's timer: a timerfd that the
// goroutine waits for in Go's network poller. Progress pushes its expiry
// back (at most every half interval, one timerfd_settime), so while the
// owner polls the timer never expires and the goroutine never wakes: no
// runtime timer fires, no idle thread leaves epoll_wait to run one on a
// CPU where a thread spins in Progress. A runtime timer would not do:
// moving one later leaves its old expiry in the heap, and an idle thread
// still wakes at it.
type watchdogTimer struct {
	f  *os.File // in the poller; Close wakes a waiting wait
	fd int      // f's descriptor, for arm under the engine mutex
}

func newWatchdogTimer() (*watchdogTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "watchdog-timerfd")
	// Deadlines work only on files in the poller: a blocking wait could
	// not be woken by Close.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, fmt.Errorf("timerfd not pollable: %w", err)
	}
	return &watchdogTimer{f: f, fd: fd}, nil
}

// arm makes the timer expire after d (d > 0), replacing any earlier
// expiry. The caller holds the engine mutex of a device that is not
// closed, so the descriptor is still open.
func (w *watchdogTimer) arm(d time.Duration) {
	setTimerfd(w.fd, d)
}

// armSafe is arm for a caller without the engine mutex: it does nothing
// once Close has run.
func (w *watchdogTimer) armSafe(d time.Duration) {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { setTimerfd(int(fd), d) })
}

func setTimerfd(fd int, d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(d, 1)))}
	_ = timerfdSettime(fd, &spec)
}

// wait blocks in the network poller until the timer expires (true) or
// Close runs (false; also if the poller fails, which it does not for
// a timerfd). A re-arm before the read resets the expiration
// count, and the read then waits again.
func (w *watchdogTimer) wait() bool {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return false
	}
	expired := false
	err = rc.Read(func(fd uintptr) bool {
		var b [8]byte
		_, err := unix.Read(int(fd), b[:])
		if err == unix.EAGAIN {
			return false
		}
		// Expired; any other error (never expected) also lets the caller
		// look at the engine rather than spin here.
		expired = true
		return true
	})
	return err == nil && expired
}

// Close closes the timer and wakes a wait.
func (w *watchdogTimer) Close() error { return w.f.Close() }
