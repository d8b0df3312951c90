package shm

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/multierr"
	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/fd"
	"github.com/ucgo/ucgo/uct"
	"github.com/ucgo/ucgo/uct/uctkit"
)

// The iface: one shared segment with a receive FIFO, the AM handler table,
// wake-ups and Close.

type amEntry struct {
	h   uct.AMHandler
	hs  uct.AMSourceHandler
	arg any
}

// Iface is an shm iface: one segment with a receive FIFO.
type Iface struct {
	md *MD
	fd *fd.FD // the segment's memfd; its number is in the address
	// keyFD is the iface's own descriptor of the MD's key table, which
	// the segment header names for peers.
	keyFD *fd.FD
	seg   []byte
	rx    ring
	head  uint64
	// cells [freed, head) have been delivered but not yet handed back to
	// the producers (releaseDelivered)
	freed   uint64
	cookie  uint64
	addr    []byte
	handler [uct.MaxAMID + 1]amEntry

	errh   uctkit.ErrorHandlerSlot
	events uct.EventQueue
	notify uctkit.Notifier
	watch  uctkit.DeviceWatchers
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
	// hold is the state of a head cell held by a live writer
	// (held_linux.go).
	hold fifoHold
	// badCells counts received cells dropped for a bad length; badAt and
	// badSeen are the time and count of the last EventCorruptPacket.
	badCells, badSeen uint64
	badAt             time.Time
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
	var keyFD int
	err := m.keyFD.Do(func(n int) (err error) {
		keyFD, err = unix.FcntlInt(uintptr(n), unix.F_DUPFD_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("shm: dup key table: %w", err)
	}
	segFD, seg, err := memfdMap("ucgo-shm-iface", segLen(cells))
	if err != nil {
		unix.Close(keyFD)
		return nil, err
	}
	var rb [8]byte
	rand.Read(rb[:])
	cookie := binary.LittleEndian.Uint64(rb[:])
	encodeHeader(seg, segHeader{PID: m.pid, Cells: cells, StartTime: m.start, Cookie: cookie, CellSize: cellSize, BufSize: bufSize,
		KeyFD: keyFD, KeyCookie: m.cookie})
	it := &Iface{md: m, fd: fd.New(segFD), keyFD: fd.New(keyFD), seg: seg, cookie: cookie, eps: map[*Endpoint]struct{}{}, me: uint32(m.pid)}
	it.src = uint64(m.pid)<<32 | uint64(segFD)
	it.rx = newRing(seg, cells)
	it.rx.initCells()
	it.addr = Address{PID: m.pid, FD: segFD, StartTime: m.start, Cookie: cookie}.pack()
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

// Arm returns ErrBusy if a message waits or is being written (its cell
// claimed: its sender may have checked for a sleeper before we announced
// ourselves, see ring.publish); else it announces that the receiver is
// about to sleep so senders wake it.
func (it *Iface) Arm() error {
	atomic.StoreUint32(it.rx.wait, 1)
	if it.rx.pending(it.head) && it.disabled.Load() == nil || it.woken.Load() != 0 {
		return uct.ErrBusy
	}
	return nil
}

// Wait sleeps on the segment's futex until a sender or Wake wakes it.
func (it *Iface) Wait(ctx context.Context) error {
	defer atomic.StoreUint32(it.rx.wait, 0)
	for {
		if it.woken.Swap(0) != 0 || it.rx.pending(it.head) && it.disabled.Load() == nil {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		v := atomic.LoadUint32(it.rx.futex)
		if it.woken.Load() != 0 || it.rx.pending(it.head) && it.disabled.Load() == nil {
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
		it.cerr = multierr.Append(it.cerr, multierr.Combine(unix.Munmap(it.seg), it.fd.Close(), it.keyFD.Close()))
		it.segMu.Unlock()
	})
	return it.cerr
}
