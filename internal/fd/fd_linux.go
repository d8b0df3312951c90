package fd

import (
	"errors"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrClosed is returned by Do once the FD is closed (or holds none).
var ErrClosed = errors.New("fd: descriptor closed")

// FD owns one open file descriptor. A nil *FD holds none: Int returns -1,
// Do returns ErrClosed and Close returns nil.
type FD struct {
	// mu is read-held by Do while it uses the number and write-held by
	// Close, so the number is not closed (and reused) under a Do.
	mu sync.RWMutex
	n  atomic.Int64 // descriptor + 1; 0 once closed
}

// New returns an FD owning n. A negative n gives an FD that holds none.
func New(n int) *FD {
	f := &FD{}
	if n >= 0 {
		f.n.Store(int64(n) + 1)
	}
	return f
}

// Int returns the descriptor number, or -1 once Close has begun. Use it
// where the owner orders every use before Close (the usual case); a use
// that may race with Close goes through Do.
func (f *FD) Int() int {
	if f == nil {
		return -1
	}
	return int(f.n.Load()) - 1
}

// Do runs fn with the descriptor number; Close waits until fn returns, so
// fn must not block for long. It returns ErrClosed, without running fn,
// once the FD is closed.
func (f *FD) Do(fn func(n int) error) error {
	if f == nil {
		return ErrClosed
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	n := f.Int()
	if n < 0 {
		return ErrClosed
	}
	return fn(n)
}

// Close closes the descriptor. The first call closes it and returns the
// result of close(2); every later or concurrent call returns nil without
// closing anything.
func (f *FD) Close() error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	n := int(f.n.Swap(0)) - 1
	f.mu.Unlock()
	if n < 0 {
		return nil
	}
	return unix.Close(n)
}
