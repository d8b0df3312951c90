package shm

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/multierr"
	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/uct"
)

const transportName = "shm"

const (
	opAdd = iota
	opAnd
	opOr
	opXor
	opSwap
	opCSwap
)

// Component is the shm transport.
type Component struct{}

// New returns the shm component.
func New() *Component { return &Component{} }

// Name returns "shm".
func (*Component) Name() string { return transportName }

// Devices returns the one device, "memory".
func (*Component) Devices() ([]uct.DeviceInfo, error) {
	return []uct.DeviceInfo{{Name: "memory", Kind: "shm"}}, nil
}

type amEntry struct {
	h   uct.AMHandler
	hs  uct.AMSourceHandler
	arg any
}

// Iface is an shm iface: one segment with a receive FIFO.
type Iface struct {
	md *MD
	fd int
	// keyFD is the iface's own descriptor of the MD's key table, which
	// the segment header names for peers.
	keyFD int
	seg   []byte
	rx    ring
	head  uint64
	// cells [freed, head) have been delivered but not yet handed back to
	// the producers (releaseDelivered)
	freed   uint64
	cookie  uint64
	addr    []byte
	handler [uct.MaxAMID + 1]amEntry

	errh   uct.ErrorHandlerSlot
	events uct.EventQueue
	notify uct.Notifier
	watch  uct.DeviceWatchers
	woken  atomic.Uint32
	// pendingN counts requests queued on all endpoints, so Progress skips
	// the endpoint scan (and its lock) when there are none.
	pendingN atomic.Int64
	mu       sync.Mutex
	eps      map[*Endpoint]struct{}
	closed   atomic.Bool
	// segMu keeps the segment mapped while Wake uses it; unmapped is set
	// by Close under it.
	segMu    sync.RWMutex
	unmapped bool
	// me is our pid as senders record it in the cells they claim.
	me uint32
	// src is our AM source as we write it into the cells we send.
	src uint64
	// idle counts empty polls; stuckHead/stuckSince track a head cell
	// claimed by a writer that has not published it.
	idle       uint32
	stuckHead  uint64
	stuckSince time.Time
	// disabled holds the *error new operations fail with while the
	// device is down or disabled.
	disabled atomic.Pointer[error]
	devMu    sync.Mutex // serialises SetDeviceStatus (disable_linux.go)
	closeMu  sync.Once
	cerr     error
}

// OpenIface opens an iface with its own segment.
func (m *MD) OpenIface(p uct.IfaceParams) (uct.Iface, error) {
	if p.Device != "" && p.Device != "memory" {
		return nil, fmt.Errorf("shm: no device %q: %w", p.Device, uct.ErrInvalidParam)
	}
	cells := defaultCells
	if p.RxQueueLen > 0 {
		for cells = 1; cells < p.RxQueueLen; cells <<= 1 {
		}
	}
	keyFD, err := unix.FcntlInt(uintptr(m.keyFD), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: dup key table: %w", err)
	}
	fd, seg, err := memfdMap("ucgo-shm-iface", segLen(cells))
	if err != nil {
		unix.Close(keyFD)
		return nil, err
	}
	var rb [8]byte
	rand.Read(rb[:])
	cookie := binary.LittleEndian.Uint64(rb[:])
	encodeHeader(seg, segHeader{PID: m.pid, Cells: cells, StartTime: m.start, Cookie: cookie, CellSize: cellSize, BufSize: bufSize,
		KeyFD: keyFD, KeyCookie: m.cookie})
	it := &Iface{md: m, fd: fd, keyFD: keyFD, seg: seg, cookie: cookie, eps: map[*Endpoint]struct{}{}, me: uint32(m.pid)}
	it.src = uint64(m.pid)<<32 | uint64(fd)
	it.rx = newRing(seg, cells)
	it.rx.initCells()
	it.addr = Address{PID: m.pid, FD: fd, StartTime: m.start, Cookie: cookie}.pack()
	it.errh.Set(p.ErrorHandler, p.ErrorArg)
	it.watch.Init("memory", uct.DeviceUp)
	return it, nil
}

// Attr returns the iface's limits.
func (it *Iface) Attr() uct.IfaceAttr {
	return uct.IfaceAttr{
		Transport: transportName, Device: "memory",
		Cap: uct.CapAMShort | uct.CapAMBcopy | uct.CapAMZcopy | uct.CapPutShort | uct.CapPutBcopy | uct.CapPutZcopy |
			uct.CapGetBcopy | uct.CapGetZcopy | uct.CapAtomic32 | uct.CapAtomic64 | uct.CapPending | uct.CapConnectToIface |
			uct.CapErrHandlePeerFailure | uct.CapEventRecv | uct.CapCheckLiveness | uct.CapSharedMemory,
		AMMaxShort: inlineMax - 8, AMMaxBcopy: bufSize, AMMaxZcopy: bufSize, AMMaxHeader: 64, AMMaxIOV: 16,
		PutMaxShort: 4096, PutMaxBcopy: 1 << 20, PutMaxZcopy: 1 << 30, GetMaxBcopy: 1 << 20, GetMaxZcopy: 1 << 30,
		AddressLen: addrLen, Latency: 200 * time.Nanosecond, Bandwidth: 6e9, Overhead: 20 * time.Nanosecond, Priority: 10,
	}
}

// Address returns the packed address.
func (it *Iface) Address() []byte { return append([]byte(nil), it.addr...) }

// SetAMHandler installs h for id. Call it before traffic arrives.
func (it *Iface) SetAMHandler(id uint8, h uct.AMHandler, arg any) error {
	if id > uct.MaxAMID {
		return fmt.Errorf("shm: AM id %d: %w", id, uct.ErrInvalidParam)
	}
	it.handler[id] = amEntry{h: h, arg: arg}
	return nil
}

// Progress delivers received AMs and dispatches pending requests.
func (it *Iface) Progress() int {
	if it.closed.Load() || it.disabled.Load() != nil {
		return 0 // a disabled device receives nothing
	}
	it.releaseDelivered()
	n := 0
	for n < 64 && it.rx.ready(it.head) {
		it.releaseDelivered()
		c := it.rx.cell(it.head)
		ln := int(*u32at(c, 8))
		id := c[12] & uct.MaxAMID
		var data []byte
		if ln <= inlineMax {
			data = c[cellHdr : cellHdr+ln]
		} else {
			data = it.rx.buf(it.head)[:ln]
		}
		if e := it.handler[id]; e.hs != nil {
			e.hs(e.arg, data, 0, uct.AMSource(*u64at(c, cellSrc)))
		} else if e.h != nil {
			e.h(e.arg, data, 0)
		}
		it.head++
		n++
	}
	if n > 0 {
		it.notify.CompletedN(n, uct.CompletionInfo{Queue: uct.NotifyRecv})
	} else if it.idle++; it.idle&1023 == 0 {
		it.checkStuck()
	}
	if it.pendingN.Load() == 0 {
		return n
	}
	it.mu.Lock()
	var pend []*Endpoint
	for ep := range it.eps {
		if len(ep.pending) > 0 {
			pend = append(pend, ep)
		}
	}
	it.mu.Unlock()
	for _, ep := range pend {
		n += ep.dispatchPending()
	}
	return n
}

// releaseDelivered hands the cell that Progress delivered last back to
// the producers. Releasing a cell is a store to a cache line that the
// producer wrote and the consumer only read: the store waits until the
// producer's copy is invalidated, a round trip between the cores. Done
// right after the handler it delays whatever the handler started, such as
// the answer of a ping-pong, which the caller sends after Progress
// returns; so Progress releases each cell before it delivers the next
// one, or on its next call. A receiver that stops calling Progress holds
// at most one delivered cell, and one that sleeps after an empty Progress
// holds none.
func (it *Iface) releaseDelivered() {
	for ; it.freed != it.head; it.freed++ {
		it.rx.release(it.freed)
	}
}

// stuckAfter is how long a claimed, unpublished head cell waits before the
// receiver asks whether its writer is still alive.
const stuckAfter = 100 * time.Millisecond

// checkStuck skips the head cell if the process that claimed it died
// before publishing it (slow path, every 1024 empty polls).
func (it *Iface) checkStuck() {
	pid := it.rx.stuckOwner(it.head)
	if pid == 0 {
		return
	}
	now := time.Now()
	if it.stuckSince.IsZero() || it.stuckHead != it.head {
		it.stuckHead, it.stuckSince = it.head, now
		return
	}
	if now.Sub(it.stuckSince) < stuckAfter || processAlive(pid) {
		return
	}
	it.releaseDelivered()
	it.rx.release(it.head)
	it.head++
	it.freed = it.head
	it.stuckSince = time.Time{}
}

// Arm returns ErrBusy if a message waits; else it announces that the
// receiver is about to sleep so senders wake it.
func (it *Iface) Arm() error {
	atomic.StoreUint32(it.rx.wait, 1)
	if it.rx.ready(it.head) && it.disabled.Load() == nil || it.woken.Load() != 0 {
		return uct.ErrBusy
	}
	return nil
}

// Wait sleeps on the segment's futex until a sender or Wake wakes it.
func (it *Iface) Wait(ctx context.Context) error {
	defer atomic.StoreUint32(it.rx.wait, 0)
	for {
		if it.woken.Swap(0) != 0 || it.rx.ready(it.head) && it.disabled.Load() == nil {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		v := atomic.LoadUint32(it.rx.futex)
		if it.woken.Load() != 0 || it.rx.ready(it.head) && it.disabled.Load() == nil {
			continue
		}
		it.rx.sleep(v, 50*time.Millisecond)
	}
}

// Wake makes Wait return. Safe from any goroutine, also during and after
// Close (an error handler running on a peer watcher may call it).
func (it *Iface) Wake() {
	it.segMu.RLock()
	defer it.segMu.RUnlock()
	if it.unmapped {
		return
	}
	it.woken.Store(1)
	it.rx.wake()
}

// Notify is VipCQNotify on received messages.
func (it *Iface) Notify(h uct.NotifyHandler, arg any) error { return it.notify.Notify(h, arg) }

// Flush: every operation is complete when it returns.
func (it *Iface) Flush(*uct.Completion) error { return nil }

// Fence: operations are ordered already.
func (it *Iface) Fence() error { return nil }

// SetErrorHandler replaces the error handler.
func (it *Iface) SetErrorHandler(h uct.ErrorHandler, arg any) { it.errh.Set(h, arg) }

// Events is the async event queue.
func (it *Iface) Events() *uct.EventQueue { return &it.events }

// WatchDevice registers fn for status changes of "memory".
func (it *Iface) WatchDevice(fn func(uct.DeviceStatusEvent)) (*uct.Watch, error) {
	return it.watch.Register(fn)
}

// endpoints returns a snapshot of the iface's endpoints.
func (it *Iface) endpoints() []*Endpoint {
	it.mu.Lock()
	defer it.mu.Unlock()
	eps := make([]*Endpoint, 0, len(it.eps))
	for ep := range it.eps {
		eps = append(eps, ep)
	}
	return eps
}

// Close closes endpoints, cancels Notify handlers and frees the segment.
func (it *Iface) Close() error {
	it.closeMu.Do(func() {
		it.closed.Store(true)
		eps := it.endpoints()
		for _, ep := range eps {
			it.cerr = multierr.Append(it.cerr, ep.Close())
		}
		storeU32(it.seg, hdrClosed, 1)
		it.notify.Cancel()
		it.events.Close()
		it.segMu.Lock()
		it.unmapped = true
		it.cerr = multierr.Append(it.cerr, multierr.Combine(unix.Munmap(it.seg), unix.Close(it.fd), unix.Close(it.keyFD)))
		it.segMu.Unlock()
	})
	return it.cerr
}

// Endpoint is a connection to a peer iface.
type Endpoint struct {
	it      *Iface
	peer    Address
	name    string
	seg     []byte
	tx      ring
	pidfd   int
	keys    peerKeyTable // the peer's key table
	watch   *os.File     // a duplicate of pidfd in Go's network poller; nil: polled
	err     atomic.Pointer[error]
	pending []uct.PendingRequest
	pmu     sync.Mutex
	stop    chan struct{}
	done    chan struct{}
	stopped sync.Once
	once    sync.Once
	cerr    error
	ev      epEvents
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
	fd, err := unix.Open("/proc/"+strconv.Itoa(a.PID)+"/fd/"+strconv.Itoa(a.FD), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(uct.ErrUnreachable, fmt.Errorf("open peer segment: %w", err))
	}
	defer unix.Close(fd)
	var sb unix.Stat_t
	if err := unix.Fstat(fd, &sb); err != nil || sb.Size < hdrSize {
		return fail(uct.ErrInvalidAddress, fmt.Errorf("peer fd %d is no shm segment", a.FD))
	}
	seg, err := unix.Mmap(fd, 0, int(sb.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
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
	ep := &Endpoint{it: it, peer: a, name: name, seg: seg, tx: newRing(seg, h.Cells), pidfd: pidfd,
		keys: peerKeyTable{fd: h.KeyFD, cookie: h.KeyCookie}, stop: make(chan struct{}), done: make(chan struct{})}
	it.mu.Lock()
	it.eps[ep] = struct{}{}
	it.mu.Unlock()
	ok = true
	ep.watch = pollableDup(pidfd)
	go ep.watchPeer()
	return ep, nil
}

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
	fds := []unix.PollFd{{Fd: int32(ep.pidfd), Events: unix.POLLIN}}
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

func (ep *Endpoint) Iface() uct.Iface { return ep.it }
func (ep *Endpoint) Peer() string     { return ep.name }

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

func (ep *Endpoint) send(op string, id uint8, parts ...[]byte) (int, error) {
	if err := ep.check(op); err != nil {
		return 0, err
	}
	if id > uct.MaxAMID {
		return 0, ep.opErr(op, uct.ErrInvalidParam, nil)
	}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n > bufSize {
		return 0, ep.opErr(op, uct.ErrInvalidParam, fmt.Errorf("%d bytes > %d", n, bufSize))
	}
	t, ok := ep.tx.reserve(ep.it.me)
	if !ok {
		return 0, ep.noResource(op)
	}
	c := ep.tx.cell(t)
	var dst []byte
	if n <= inlineMax {
		dst = c[cellHdr:]
	} else {
		dst = ep.tx.buf(t)
	}
	off := 0
	for _, p := range parts {
		off += copy(dst[off:], p)
	}
	*u32at(c, 8) = uint32(n)
	c[12] = id
	*u64at(c, cellSrc) = ep.it.src
	ep.tx.publish(t)
	return n, nil
}

// AMShort sends header and payload through the FIFO.
func (ep *Endpoint) AMShort(id uint8, header uint64, payload []byte) error {
	if len(payload) > inlineMax-8 {
		return ep.opErr("am_short", uct.ErrInvalidParam, nil)
	}
	if err := ep.check("am_short"); err != nil {
		return err
	}
	if id > uct.MaxAMID {
		return ep.opErr("am_short", uct.ErrInvalidParam, nil)
	}
	t, ok := ep.tx.reserve(ep.it.me)
	if !ok {
		return ep.noResource("am_short")
	}
	c := ep.tx.cell(t)
	*u64at(c, cellHdr) = header
	copy(c[cellHdr+8:], payload)
	*u32at(c, 8) = uint32(8 + len(payload))
	c[12] = id
	*u64at(c, cellSrc) = ep.it.src
	ep.tx.publish(t)
	return nil
}

// AMBcopy sends header and payload as one message.
func (ep *Endpoint) AMBcopy(id uint8, header, payload []byte) (int, error) {
	return ep.send("am_bcopy", id, header, payload)
}

// AMZcopy sends header and iov; the data is copied before it returns, so
// it completes at once (nil) and comp is not invoked.
func (ep *Endpoint) AMZcopy(id uint8, header []byte, iov [][]byte, comp *uct.Completion) error {
	if len(header) > 64 || len(iov) > 16 {
		return ep.opErr("am_zcopy", uct.ErrInvalidParam, nil)
	}
	parts := make([][]byte, 0, len(iov)+1)
	parts = append(parts, header)
	parts = append(parts, iov...)
	_, err := ep.send("am_zcopy", id, parts...)
	return err
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

// exited reports whether the peer process has exited (zombies included),
// from its pidfd.
func (ep *Endpoint) exited() bool {
	fds := []unix.PollFd{{Fd: int32(ep.pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents != 0
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
		ep.cerr = multierr.Combine(err, ep.keys.close(), unix.Munmap(ep.seg), unix.Close(ep.pidfd))
	})
	return ep.cerr
}

var (
	_ uct.Component = (*Component)(nil)
	_ uct.MD        = (*MD)(nil)
	_ uct.Iface     = (*Iface)(nil)
	_ uct.Endpoint  = (*Endpoint)(nil)
)
