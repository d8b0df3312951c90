package rc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/multierr"

	"github.com/ucgo/ucgo/internal/fd"
	"github.com/ucgo/ucgo/transport/rc/verbs"
	"github.com/ucgo/ucgo/uct"
	"github.com/ucgo/ucgo/uct/uctkit"
)

// Sizes of an iface's queues and buffers.
const (
	// segSize is the largest message a receive buffer or a bounce
	// buffer holds (AMMaxBcopy, PutMaxBcopy): 16 KiB and 64 bytes of
	// room, so that a 16 KiB message with ucp's eager and sequence
	// headers fits one segment and goes eager as one message, not in
	// fragments (each a message of its own on both sides) nor by
	// rendezvous.
	segSize = 16384 + 64
	// bufSize is the stride of the receive and bounce buffers: a
	// message starts bodyOff bytes into its buffer, 64-byte aligned as
	// the buffers are, and an AM's header byte is the one before it.
	bufSize     = bodyOff + segSize
	bodyOff     = 64
	rxCount     = 512  // receive buffers pre-posted to the SRQ
	txCount     = 256  // bounce buffers
	opSlots     = 4096 // operations outstanding on the iface
	sqDepth     = 256  // send queue depth of each QP
	amWindow    = 128  // AM credits of an endpoint
	amMaxHeader = 128  // AMZcopy header
	maxIOV      = 8    // AMZcopy, PutZcopy and GetZcopy gather/scatter entries
	maxRdAtomic = 16   // READs and atomics outstanding per QP
	maxZcopy    = 1 << 30
	cqSize      = opSlots + rxCount + 4*sqDepth
	pollBatch   = 64

	defaultTimeout = 3 * time.Second
	retryCnt       = 6
	rnrRetry       = 7  // infinite, as RNR is back-pressure, not failure
	minRNRTimer    = 12 // 0.64 ms
)

// grantTag marks the WR id of a credit grant (a passive QP's send).
const grantTag = 1 << 63

// Iface is an rc iface: a CQ with a completion channel, an SRQ of AM
// receive buffers, bounce buffers for bcopy sends, and a connection
// manager that creates a passive QP for every endpoint a peer opens to it.
type Iface struct {
	md    *MD
	dev   *verbs.Device
	ch    *verbs.CompChannel
	cq    *verbs.CQ
	srq   *verbs.SRQ
	rxBuf []byte
	rxMR  *verbs.MR
	txBuf []byte // txCount bounce buffers, then the inline scratch area
	txMR  *verbs.MR
	res   []byte // 8-byte atomic result per op slot
	resMR *verbs.MR
	cm    *cmServer
	addr  Address
	nonce uint64
	mtu   verbs.MTU

	maxInline int
	wakeFD    *fd.FD

	events   *uct.EventQueue
	errh     uctkit.ErrorHandlerSlot
	notifier uctkit.Notifier

	am [uct.MaxAMID + 1]struct {
		h   uct.AMHandler
		hs  uct.AMSourceHandler // amsource.go
		arg any
	}

	// mu guards what the connection manager's goroutines touch.
	mu      sync.Mutex
	eps     map[uint32]*Endpoint // by local QPN
	dialing map[*connecting]bool // StartConnect's connections not yet finished or canceled (iface goroutine)
	passive map[uint32]*passiveQP
	closed  bool

	ops       []op
	freeOps   []int32
	freeTx    []int32
	wc        []verbs.WC
	backlog   []verbs.WC
	sge       [maxIOV + 1]verbs.SGE
	pendEPs   []*Endpoint
	linkDown  atomic.Bool
	linkWatch *uct.Watch
	// attention is set by goroutines that failed an endpoint
	// asynchronously; Progress applies their errors.
	attention atomic.Bool
	isClosed  atomic.Bool
	closeOnce sync.Once
	closeErr  error

	rdmaDisabled atomic.Bool // the device is RDMA-disabled (disable.go)
}

// passiveQP is the QP an iface created for a peer's endpoint. It receives
// the peer's AMs and grants credits back.
type passiveQP struct {
	qp     *verbs.QP
	origin uint64 // the requesting iface's nonce (amsource.go)
	recvd  int    // AMs received since the last grant
	owed   int    // credits not yet granted (the SQ was full)
	sqUsed int
}

// OpenIface opens an iface on the MD's device.
func (m *MD) OpenIface(p uct.IfaceParams) (uct.Iface, error) {
	if p.Device != "" && p.Device != m.dev.Name() {
		return nil, fmt.Errorf("rc: open iface on %q: this MD serves %q; open an MD of a component configured for it: %w",
			p.Device, m.dev.Name(), uct.ErrUnsupported)
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("rc: open iface: %w", uct.ErrClosed)
	}
	it := &Iface{md: m, dev: m.dev, nonce: randU64(), events: uct.NewEventQueue(),
		eps: map[uint32]*Endpoint{}, passive: map[uint32]*passiveQP{}}
	it.errh.Set(p.ErrorHandler, p.ErrorArg)
	if err := it.open(); err != nil {
		it.release()
		return nil, err
	}
	if p.Group != nil {
		if err := it.cq.SetProgressGroup(p.Group); err != nil {
			it.release()
			return nil, fmt.Errorf("rc: open iface: %w", err)
		}
	}
	m.mu.Lock()
	m.ifaces[it] = struct{}{}
	m.mu.Unlock()
	return it, nil
}

func (it *Iface) open() error {
	var err error
	dev, pd := it.dev, it.md.pd
	it.maxInline = min(dev.QueryDevice().MaxInlineData, 1024)
	it.mtu = dev.QueryPort().ActiveMTU
	if it.wakeFD, err = newEventFD(); err != nil {
		return fmt.Errorf("rc: open iface: %w", err)
	}
	if it.ch, err = dev.NewCompChannel(); err != nil {
		return fmt.Errorf("rc: open iface: %w", err)
	}
	if it.cq, err = dev.CreateCQ(cqSize, it.ch); err != nil {
		return fmt.Errorf("rc: open iface: %w", err)
	}
	if it.srq, err = pd.CreateSRQ(verbs.SRQAttr{MaxWR: rxCount, MaxSGE: 1}); err != nil {
		return fmt.Errorf("rc: open iface: %w", err)
	}
	it.rxBuf = make([]byte, rxCount*bufSize)
	if it.rxMR, err = pd.RegMR(it.rxBuf, verbs.AccessLocalWrite); err != nil {
		return fmt.Errorf("rc: open iface: %w", err)
	}
	it.txBuf = make([]byte, txCount*bufSize+it.maxInline)
	if it.txMR, err = pd.RegMR(it.txBuf, verbs.AccessLocalWrite); err != nil {
		return fmt.Errorf("rc: open iface: %w", err)
	}
	it.res = wordBytes(make([]uint64, opSlots))
	if it.resMR, err = pd.RegMR(it.res, verbs.AccessLocalWrite); err != nil {
		return fmt.Errorf("rc: open iface: %w", err)
	}
	for i := 0; i < rxCount; i++ {
		if err := it.postRecv(i); err != nil {
			return fmt.Errorf("rc: open iface: %w", err)
		}
	}
	it.ops = make([]op, opSlots)
	it.freeOps = make([]int32, 0, opSlots)
	for i := opSlots - 1; i >= 0; i-- {
		it.freeOps = append(it.freeOps, int32(i))
	}
	it.freeTx = make([]int32, 0, txCount)
	for i := txCount - 1; i >= 0; i-- {
		it.freeTx = append(it.freeTx, int32(i))
	}
	it.wc = make([]verbs.WC, pollBatch)
	// The link state: a watcher first, then the current status, so no
	// change is lost in between.
	if it.linkWatch, err = dev.Watchers.Register(func(e uct.DeviceStatusEvent) { it.deviceStatus(e.Status) }); err != nil {
		return fmt.Errorf("rc: open iface: %w", err)
	}
	st := dev.Watchers.Status()
	it.linkDown.Store(!st.Has(uct.DeviceUp))
	it.rdmaDisabled.Store(st.Has(uct.DeviceRDMADisabled))
	local := dev.LocalAddr()
	if it.cm, err = listenCM(local.Addr(), it.acceptCM); err != nil {
		return err
	}
	it.addr = Address{IP: local.Addr(), UDPPort: local.Port(), CMPort: it.cm.Port(), Nonce: it.nonce}
	return nil
}

// postRecv posts receive buffer i for an AM's header and up to segSize
// message bytes (or a grant).
func (it *Iface) postRecv(i int) error {
	_, err := it.srq.PostRecv(verbs.RecvWR{ID: uint64(i), SG: []verbs.SGE{it.rxMR.SGE(i*bufSize+bodyOff-amHdrLen, amHdrLen+segSize)}})
	return err
}

// Attr describes the iface.
func (it *Iface) Attr() uct.IfaceAttr {
	return uct.IfaceAttr{
		Transport: transportName,
		Device:    it.dev.Name(),
		Cap: uct.CapAMShort | uct.CapAMBcopy | uct.CapAMZcopy | uct.CapPutShort | uct.CapPutBcopy | uct.CapPutZcopy |
			uct.CapGetBcopy | uct.CapGetZcopy | uct.CapAtomic32 | uct.CapAtomic64 | uct.CapPending |
			uct.CapConnectToIface | uct.CapErrHandlePeerFailure | uct.CapEventSendComp | uct.CapEventRecv |
			uct.CapCheckLiveness,
		AMMaxShort:  it.maxInline - amHdrLen - 8,
		AMMaxBcopy:  segSize,
		AMMaxZcopy:  segSize,
		AMMaxHeader: amMaxHeader,
		AMMaxIOV:    maxIOV,
		PutMaxShort: it.maxInline,
		PutMaxBcopy: segSize,
		PutMaxZcopy: maxZcopy,
		GetMaxBcopy: maxZcopy,
		GetMaxZcopy: maxZcopy,
		AddressLen:  addrLen,
		Latency:     5 * time.Microsecond,
		Bandwidth:   2e9,
		Overhead:    500 * time.Nanosecond,
		// AMZcopy copies into a bounce buffer as AMBcopy does (see
		// AMZcopy), so it never costs less.
		AMZcopyMin: segSize + 1,
		// An AM is one SEND whose payload is the 1-byte AM header and
		// the message: k times the port's MTU (and so of every path
		// MTU, a power of two not above it) less the header fills whole
		// packets of one size, which the device merges with the next
		// message's into one GSO datagram. (Any AM leaves in one
		// datagram of its own: its last packet is its shortest.)
		AMBcopyAlign:     it.mtu.Bytes(),
		AMBcopyAlignLess: amHdrLen,
	}
}

// Address returns the packed iface address.
func (it *Iface) Address() []byte { return it.addr.Pack() }

// SetAMHandler installs h for id; nil removes it.
func (it *Iface) SetAMHandler(id uint8, h uct.AMHandler, arg any) error {
	if id > uct.MaxAMID {
		return fmt.Errorf("rc: AM id %d > %d: %w", id, uct.MaxAMID, uct.ErrInvalidParam)
	}
	it.am[id].h, it.am[id].hs, it.am[id].arg = h, nil, arg
	return nil
}

// SetErrorHandler replaces the error handler; nil restores the default.
func (it *Iface) SetErrorHandler(h uct.ErrorHandler, arg any) { it.errh.Set(h, arg) }

// Events returns the iface's async event queue.
func (it *Iface) Events() *uct.EventQueue { return it.events }

// WatchDevice registers fn for link up and down of the iface's netdev.
func (it *Iface) WatchDevice(fn func(uct.DeviceStatusEvent)) (*uct.Watch, error) {
	return it.dev.Watchers.Register(fn)
}

// Notify is VipCQNotify over AM receives and operation completions.
func (it *Iface) Notify(h uct.NotifyHandler, arg any) error {
	return it.notifier.Notify(h, arg)
}

// deviceEvent takes an event of the MD's device (on the MD's event
// goroutine): port events go to every iface, QP events to the QP's owner.
// An event about an endpoint's QP is owned by the endpoint, so that its
// Close waits for it; it is posted under it.mu, where Close removes the
// endpoint, so none is posted for an endpoint whose Close has begun. An
// error of a passive QP (the target side of a peer's endpoint: a refused
// remote key, a bad request) also reaches the error handler, since no
// operation of ours reports it.
func (it *Iface) deviceEvent(e *uct.Event) {
	ne := &uct.Event{Type: e.Type, Object: e.Object, Owner: it, Err: e.Err}
	var target error
	it.mu.Lock()
	switch e.Type {
	case uct.EventPortError, uct.EventPortActive, uct.EventDeviceFatal, uct.EventGIDChange, uct.EventCorruptPacket:
	default:
		qp, ok := e.Owner.(*verbs.QP)
		if !ok {
			break
		}
		ep := it.eps[qp.QPNum()]
		_, passive := it.passive[qp.QPNum()]
		if ep == nil && !passive {
			it.mu.Unlock()
			return
		}
		if ep != nil && ep.qp == qp {
			ne.Endpoint, ne.Owner = ep, ep
		} else if passive && e.Err != nil {
			target = uct.NewOpError(transportName, "target", e.Object, uct.OK, e.Err)
		}
	}
	if it.isClosed.Load() {
		it.mu.Unlock()
		return
	}
	it.events.Post(ne)
	it.mu.Unlock()
	if target != nil {
		it.errh.Call(nil, target)
	}
	it.Wake()
}

// Progress drives the device, polls the CQ, runs completions and AM
// handlers and dispatches pending requests.
func (it *Iface) Progress() int {
	if it.isClosed.Load() {
		return 0
	}
	n := 0
	if it.attention.Load() {
		it.attention.Store(false)
		n += it.applyAsyncErrors()
	}
	if len(it.backlog) > 0 {
		b := it.backlog
		it.backlog = nil
		for i := range b {
			it.handleWC(&b[i])
		}
		n += len(b)
	}
	k := it.cq.Poll(it.wc)
	for i := 0; i < k; i++ {
		it.handleWC(&it.wc[i])
	}
	n += k
	if len(it.pendEPs) > 0 {
		n += it.dispatchPending()
	}
	return n
}

func (it *Iface) applyAsyncErrors() int {
	it.mu.Lock()
	var failed []*Endpoint
	for _, ep := range it.eps {
		if ep.asyncErr.Load() != nil && ep.err == nil {
			failed = append(failed, ep)
		}
	}
	it.mu.Unlock()
	for _, ep := range failed {
		ep.fail(*ep.asyncErr.Load())
	}
	return len(failed)
}

func (it *Iface) handleWC(wc *verbs.WC) {
	if wc.Opcode == verbs.WCRecv || wc.Opcode == verbs.WCRecvRDMAWithImm {
		it.recvDone(wc)
		return
	}
	if wc.WRID&grantTag != 0 {
		it.mu.Lock()
		if pq := it.passive[wc.QPNum]; pq != nil {
			pq.sqUsed--
			if pq.owed > 0 && wc.Status == verbs.WCSuccess {
				it.grantLocked(pq, 0)
			}
		}
		it.mu.Unlock()
		return
	}
	it.sendDone(wc)
}

func (it *Iface) recvDone(wc *verbs.WC) {
	idx := int(wc.WRID)
	if wc.Status != verbs.WCSuccess || idx < 0 || idx >= rxCount {
		if idx >= 0 && idx < rxCount && !it.isClosed.Load() {
			it.postRecv(idx)
		}
		return
	}
	if wc.Flags&verbs.WCWithImm != 0 && immIsGrant(wc.Imm) {
		it.mu.Lock()
		ep := it.eps[wc.QPNum]
		it.mu.Unlock()
		it.postRecv(idx)
		if ep != nil {
			ep.credits += immCredits(wc.Imm)
			if len(ep.pending) > 0 {
				it.wantDispatch(ep)
			}
		}
		return
	}
	// Anything else took a receive buffer as an AM does and counts
	// towards the sender's credits; it reaches a handler if it is an AM
	// (no immediate, a header with a valid id).
	if wc.Flags&verbs.WCWithImm == 0 {
		off := idx*bufSize + bodyOff - amHdrLen
		if id, msg, ok := decodeAM(it.rxBuf[off : off+int(wc.ByteLen)]); ok {
			if e := &it.am[id]; e.hs != nil {
				e.hs(e.arg, msg, 0, uct.AMSource(wc.QPNum))
			} else if e.h != nil {
				e.h(e.arg, msg, 0)
			}
		}
	}
	it.postRecv(idx)
	it.mu.Lock()
	if pq := it.passive[wc.QPNum]; pq != nil {
		pq.recvd++
		if pq.recvd >= amWindow/2 {
			it.grantLocked(pq, pq.recvd)
			pq.recvd = 0
		}
	}
	it.mu.Unlock()
	it.notifier.Completed(uct.CompletionInfo{Queue: uct.NotifyRecv})
}

// grantLocked returns n (plus any owed) credits to the peer of pq.
func (it *Iface) grantLocked(pq *passiveQP, n int) {
	pq.owed += n
	if pq.owed == 0 || pq.sqUsed >= sqDepth {
		return
	}
	_, err := pq.qp.PostSend(verbs.SendWR{ID: grantTag | uint64(pq.qp.QPNum()), Opcode: verbs.WRSendWithImm,
		Flags: verbs.SendSignaled | verbs.SendInline, Imm: immGrantOf(pq.owed)})
	if err == nil {
		pq.sqUsed++
		pq.owed = 0
	}
}

func (it *Iface) wantDispatch(ep *Endpoint) {
	if !ep.inPendList {
		ep.inPendList = true
		it.pendEPs = append(it.pendEPs, ep)
	}
}

func (it *Iface) dispatchPending() int {
	n := 0
	eps := it.pendEPs
	it.pendEPs = nil
	for _, ep := range eps {
		ep.inPendList = false
		n += ep.dispatch()
		if len(ep.pending) > 0 {
			it.wantDispatch(ep)
		}
	}
	return n
}

// Arm arms the CQ so that the next completion wakes Wait; ErrBusy if
// something is already waiting for Progress.
func (it *Iface) Arm() error {
	if it.isClosed.Load() {
		return uct.ErrClosed
	}
	if len(it.backlog) > 0 || it.attention.Load() || it.hasDispatchable() {
		return uct.ErrBusy
	}
	for it.ch.TryGetCQEvent() != nil {
	}
	if k := it.cq.Poll(it.wc); k > 0 {
		it.backlog = append(it.backlog, it.wc[:k]...)
		return uct.ErrBusy
	}
	if err := it.cq.ReqNotify(false); err != nil {
		return err
	}
	if k := it.cq.PollNoProgress(it.wc); k > 0 {
		it.backlog = append(it.backlog, it.wc[:k]...)
		return uct.ErrBusy
	}
	return nil
}

func (it *Iface) hasDispatchable() bool {
	for _, ep := range it.pendEPs {
		if ep.err != nil || ep.hasRoom(true) {
			return true
		}
	}
	return false
}

// Wait sleeps until the completion channel fires, a packet arrives on the
// device's socket, Wake is called or ctx ends. When other ifaces share
// the device (the workers of a process), it leaves the socket to the
// device's background goroutine (verbs.Device.Sleep), which receives the
// packets that arrive while nobody polls and runs the engine, and so
// fires the channel: the ifaces sleeping at once then do not all wake
// for every packet the device receives, another iface polling. An iface
// alone on its device, or a device without that goroutine, has the
// socket watched here (one wake-up less per message).
func (it *Iface) Wait(ctx context.Context) error {
	if it.isClosed.Load() {
		return uct.ErrClosed
	}
	stop := context.AfterFunc(ctx, it.Wake)
	defer stop()
	fds := [3]int{it.ch.Fd(), it.wakeFD.Int(), it.dev.Fd()}
	n := len(fds)
	if it.md.shared() && it.dev.Sleep() {
		n--
	}
	if err := pollFDs(fds[:n]...); err != nil {
		return err
	}
	drainEventFD(it.wakeFD.Int())
	return ctx.Err()
}

// Wake makes a concurrent Wait return.
func (it *Iface) Wake() {
	if !it.isClosed.Load() {
		// Do: a Wake racing with Close never writes to a reused number.
		_ = it.wakeFD.Do(func(n int) error { signalEventFD(n); return nil })
	}
}

// Flush completes when every operation of every endpoint has completed.
func (it *Iface) Flush(comp *uct.Completion) error {
	if it.isClosed.Load() {
		return uct.NewOpError(transportName, "iface_flush", "", uct.ErrClosed, nil)
	}
	it.mu.Lock()
	var busy []*Endpoint
	for _, ep := range it.eps {
		if ep.outstanding() {
			busy = append(busy, ep)
		}
	}
	it.mu.Unlock()
	if len(busy) == 0 {
		return nil
	}
	agg := &uct.Completion{Count: int32(len(busy)), Func: func(c *uct.Completion) { comp.Invoke(c.Status) }}
	for _, ep := range busy {
		ep.addFlushWaiter(agg)
	}
	return uct.ErrInProgress
}

// Fence orders later operations of every endpoint after earlier ones.
func (it *Iface) Fence() error {
	it.mu.Lock()
	defer it.mu.Unlock()
	for _, ep := range it.eps {
		ep.fence = true
	}
	return nil
}

// Close closes the connection manager (destroying passive QPs), closes
// every endpoint (their outstanding operations complete with
// ErrCanceled), cancels queued Notify handlers and frees the queues.
func (it *Iface) Close() error {
	it.closeOnce.Do(func() {
		var err error
		if it.cm != nil {
			err = it.cm.Close()
		}
		it.mu.Lock()
		eps := make([]*Endpoint, 0, len(it.eps))
		for _, ep := range it.eps {
			eps = append(eps, ep)
		}
		it.mu.Unlock()
		for _, ep := range eps {
			err = multierr.Append(err, ep.Close())
		}
		for c := range it.dialing {
			c.Cancel()
		}
		it.mu.Lock()
		it.closed = true
		it.mu.Unlock()
		it.isClosed.Store(true)
		it.notifier.Cancel()
		it.md.mu.Lock()
		delete(it.md.ifaces, it)
		it.md.mu.Unlock()
		it.events.Close()
		it.closeErr = multierr.Append(err, it.release())
	})
	return it.closeErr
}

// release frees what open created.
func (it *Iface) release() error {
	var err error
	if it.linkWatch != nil {
		it.linkWatch.Close()
	}
	if it.srq != nil {
		err = multierr.Append(err, it.srq.Close())
	}
	for _, mr := range []*verbs.MR{it.rxMR, it.txMR, it.resMR} {
		if mr != nil {
			err = multierr.Append(err, mr.Dereg())
		}
	}
	if it.cq != nil {
		err = multierr.Append(err, it.cq.Close())
	}
	if it.ch != nil {
		err = multierr.Append(err, it.ch.Close())
	}
	if it.cm != nil && it.addr.CMPort == 0 {
		err = multierr.Append(err, it.cm.Close())
	}
	err = multierr.Append(err, it.wakeFD.Close())
	if errors.Is(err, uct.ErrBusy) {
		return fmt.Errorf("rc: close iface: %w", err)
	}
	return err
}
