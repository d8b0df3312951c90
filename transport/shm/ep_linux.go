package shm

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/multierr"
	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/fd"
	"github.com/ucgo/ucgo/uct"
)

// Endpoint lifecycle: connect to a peer segment, state checks, pending
// requests, liveness and Close.

// Endpoint is a connection to a peer iface.
type Endpoint struct {
	it       *Iface
	peer     Address
	name     string
	seg      []byte
	tx       ring
	disabled *uint32 // the peer segment's disabled word
	pidfd    *fd.FD
	keys     peerKeyTable // the peer's key table
	watch    *os.File     // a duplicate of pidfd in Go's network poller; nil: polled
	err      atomic.Pointer[error]
	pending  []uct.PendingRequest
	pmu      sync.Mutex
	stop     chan struct{}
	done     chan struct{}
	stopped  sync.Once
	once     sync.Once
	cerr     error
	ev       epEvents
	// rxMark is the hand-back counter of our own receive ring as the last
	// send saw it (prefetchStreaming)
	rxMark uint64
}

// Connect attaches to the segment of the iface at addr.
func (it *Iface) Connect(addr []byte, _ uct.EPParams) (uct.Endpoint, error) {
	if it.closed.Load() {
		return nil, uct.NewOpError(transportName, "connect", "", uct.ErrClosed, nil)
	}
	if p := it.disabled.Load(); p != nil {
		return nil, uct.NewOpError(transportName, "connect", "", uct.ErrLocalNICFailed, *p)
	}
	a, err := DecodeAddress(addr)
	if err != nil {
		return nil, uct.NewOpError(transportName, "connect", "", uct.ErrInvalidAddress, err)
	}
	name := fmt.Sprintf("pid %d fd %d", a.PID, a.FD)
	fail := func(st uct.Status, err error) (uct.Endpoint, error) {
		return nil, uct.NewOpError(transportName, "connect", name, st, err)
	}
	pidfd, err := unix.PidfdOpen(a.PID, 0)
	if err != nil {
		return fail(uct.ErrUnreachable, fmt.Errorf("process %d is not running: %w", a.PID, err))
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(pidfd)
		}
	}()
	st, err := procStartTime(a.PID)
	if err != nil {
		return fail(uct.ErrUnreachable, err)
	}
	if st != a.StartTime {
		return fail(uct.ErrUnreachable, fmt.Errorf("process %d started at %d, address is for %d (pid reused)", a.PID, st, a.StartTime))
	}
	segFD, err := unix.Open("/proc/"+strconv.Itoa(a.PID)+"/fd/"+strconv.Itoa(a.FD), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(uct.ErrUnreachable, fmt.Errorf("open peer segment: %w", err))
	}
	defer unix.Close(segFD) // the mapping outlives it
	var sb unix.Stat_t
	if err := unix.Fstat(segFD, &sb); err != nil || sb.Size < hdrSize {
		return fail(uct.ErrInvalidAddress, fmt.Errorf("peer fd %d is no shm segment", a.FD))
	}
	seg, err := unix.Mmap(segFD, 0, int(sb.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail(uct.ErrUnreachable, fmt.Errorf("map peer segment: %w", err))
	}
	h, err := decodeHeader(seg, len(seg))
	if err == nil && (h.PID != a.PID || h.StartTime != a.StartTime) {
		err = fmt.Errorf("segment belongs to pid %d/%d, not %d/%d: %w", h.PID, h.StartTime, a.PID, a.StartTime, uct.ErrInvalidAddress)
	}
	if err == nil && h.Cookie != a.Cookie {
		err = fmt.Errorf("segment cookie mismatch (stale address): %w", uct.ErrInvalidAddress)
	}
	if err != nil {
		unix.Munmap(seg)
		return fail(uct.ErrInvalidAddress, err)
	}
	ep := &Endpoint{it: it, peer: a, name: name, seg: seg, tx: newRing(seg, h.Cells), disabled: u32at(seg, hdrDisabled), pidfd: fd.New(pidfd),
		keys: peerKeyTable{fd: h.KeyFD, cookie: h.KeyCookie}, stop: make(chan struct{}), done: make(chan struct{})}
	it.mu.Lock()
	it.eps[ep] = struct{}{}
	it.mu.Unlock()
	ok = true
	ep.watch = pollableDup(pidfd)
	go ep.watchPeer()
	return ep, nil
}

func (ep *Endpoint) Iface() uct.Iface { return ep.it }

func (ep *Endpoint) Peer() string { return ep.name }

// Err returns the endpoint's fatal error.
func (ep *Endpoint) Err() error {
	if p := ep.err.Load(); p != nil {
		return *p
	}
	return nil
}

func (ep *Endpoint) check(op string) error {
	if p := ep.err.Load(); p != nil {
		return uct.NewOpError(transportName, op, ep.name, uct.StatusOf(*p), *p)
	}
	if loadU32(ep.seg, hdrDisabled) != 0 {
		return ep.peerDisabled(op)
	}
	return nil
}

// troubled reports whether the endpoint has failed or the peer's device
// is disabled: the two loads of check, which is not inlined, for the fast
// paths to call check only when one of them finds something.
func (ep *Endpoint) troubled() bool {
	return ep.err.Load() != nil || atomic.LoadUint32(ep.disabled) != 0
}

// sealCell writes the header words of a message of n bytes with AM id
// into cell c, which the caller then publishes.
func (ep *Endpoint) sealCell(c []byte, n int, id uint8) {
	*u32at(c, 8) = uint32(n)
	c[12] = id
	*u64at(c, cellSrc) = ep.it.src
}

// noResource is the slow path of a full FIFO: a peer that closed its iface
// never drains it.
func (ep *Endpoint) noResource(op string) error {
	if loadU32(ep.seg, hdrClosed) != 0 {
		ep.peerClosed()
		return ep.check(op)
	}
	return uct.ErrNoResource
}

func (ep *Endpoint) opErr(op string, st uct.Status, cause error) error {
	return uct.NewOpError(transportName, op, ep.name, st, cause)
}

// Flush: nothing is ever outstanding. With cancel, pending requests stay
// with their owner (purge them with PendingPurge).
func (ep *Endpoint) Flush(cancel bool, comp *uct.Completion) error { return ep.check("flush") }

func (ep *Endpoint) Fence() error { return ep.check("fence") }

// PendingAdd queues r; ErrBusy if the peer FIFO has room now.
func (ep *Endpoint) PendingAdd(r uct.PendingRequest) error {
	if err := ep.check("pending_add"); err != nil {
		return err
	}
	ep.pmu.Lock()
	defer ep.pmu.Unlock()
	if len(ep.pending) == 0 && ep.tx.hasRoom() {
		return uct.ErrBusy
	}
	ep.pending = append(ep.pending, r)
	ep.it.pendingN.Add(1)
	return nil
}

func (ep *Endpoint) dispatchPending() int {
	n := 0
	for {
		ep.pmu.Lock()
		if len(ep.pending) == 0 || !ep.tx.hasRoom() {
			ep.pmu.Unlock()
			return n
		}
		r := ep.pending[0]
		ep.pmu.Unlock()
		err := r.Dispatch()
		if errors.Is(err, uct.ErrNoResource) {
			return n
		}
		ep.pmu.Lock()
		if len(ep.pending) > 0 && ep.pending[0] == r {
			ep.pending = ep.pending[1:]
			ep.it.pendingN.Add(-1)
		}
		ep.pmu.Unlock()
		n++
	}
}

// PendingPurge removes every queued request.
func (ep *Endpoint) PendingPurge(cb func(uct.PendingRequest)) {
	ep.pmu.Lock()
	p := ep.pending
	ep.pending = nil
	ep.it.pendingN.Add(-int64(len(p)))
	ep.pmu.Unlock()
	for _, r := range p {
		if cb != nil {
			cb(r)
		}
	}
}

// CheckLiveness completes at once with nil or the peer's failure.
func (ep *Endpoint) CheckLiveness(comp *uct.Completion) error {
	if err := ep.check("check_liveness"); err != nil {
		return err
	}
	if st, err := procStartTime(ep.peer.PID); err != nil || st != ep.peer.StartTime || ep.exited() {
		ep.peerFailed()
		return ep.check("check_liveness")
	}
	if loadU32(ep.seg, hdrClosed) != 0 {
		ep.peerClosed()
		return ep.check("check_liveness")
	}
	return nil
}

// Close stops the watcher, waits (bounded) for acks of its events and
// unmaps the peer segment.
func (ep *Endpoint) Close() error {
	ep.once.Do(func() {
		ep.beginClose()
		cl := error(uct.NewOpError(transportName, "close", ep.name, uct.ErrClosed, nil))
		ep.err.CompareAndSwap(nil, &cl)
		ep.stopWatch()
		ep.it.mu.Lock()
		delete(ep.it.eps, ep)
		ep.it.mu.Unlock()
		ep.PendingPurge(nil)
		err := ep.it.events.WaitAcks(ep, time.Second)
		if ep.watch != nil {
			err = multierr.Append(err, ep.watch.Close())
		}
		ep.cerr = multierr.Combine(err, ep.keys.close(), unix.Munmap(ep.seg), ep.pidfd.Close())
	})
	return ep.cerr
}
