package shm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/uct"
)

// procStartTime returns field 22 (starttime, clock ticks since boot) of
// /proc/PID/stat. A missing process gives an error wrapping
// uct.ErrUnreachable.
func procStartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("shm: process %d: %w: %w", pid, uct.ErrUnreachable, err)
	}
	return parseStat(b)
}

func parseStat(b []byte) (uint64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("shm: malformed /proc stat: %w", uct.ErrInvalidParam)
	}
	f := bytes.Fields(b[i+1:])
	// fields after comm start at field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return 0, fmt.Errorf("shm: short /proc stat: %w", uct.ErrInvalidParam)
	}
	return strconv.ParseUint(string(f[19]), 10, 64)
}

// processAlive reports whether pid is running (a zombie counts as dead).
func processAlive(pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return !errors.Is(err, unix.ESRCH)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err != nil || n == 0
}

// processExiting reports whether pid has no open files any more: it is
// exiting (or gone). A live process always has some.
func processExiting(pid int) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return true
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	return err != nil || len(names) == 0
}

// pollableDup returns a non-blocking duplicate of fd registered with Go's
// network poller, or nil if the poller does not take it.
func pollableDup(fd int) *os.File {
	d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	if err := unix.SetNonblock(d, true); err != nil {
		unix.Close(d)
		return nil
	}
	f := os.NewFile(uintptr(d), "pidfd")
	// Deadlines work only on files in the poller.
	if f.SetReadDeadline(time.Time{}) != nil {
		f.Close()
		return nil
	}
	return f
}
