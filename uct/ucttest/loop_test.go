package ucttest

// A minimal in-process reference implementation of the uct contract, used
// only to check the suite itself (every case must pass on it). It is not a
// transport: memory is reached through a table, not by address.

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/ucgo/ucgo/uct"
	"github.com/ucgo/ucgo/uct/uctkit"
)

var loopReg = struct {
	sync.Mutex
	next   uint64
	mems   map[uint64]*loopMem
	ifaces map[uint64]*loopIface
}{next: 1, mems: map[uint64]*loopMem{}, ifaces: map[uint64]*loopIface{}}

type loopMD struct{}

func (loopMD) Attr() uct.MDAttr {
	return uct.MDAttr{Component: "loop", CanRegister: true, CanAlloc: true, RKeySize: 8, MaxAlloc: 1 << 30, MaxReg: 1 << 30}
}

type loopMem struct {
	id     uint64
	buf    []byte
	closed bool
}

func (m *loopMem) Bytes() []byte    { return m.buf }
func (m *loopMem) Address() uint64  { return m.id << 40 }
func (m *loopMem) PackRKey() []byte { return binary.LittleEndian.AppendUint64(nil, m.id) }
func (m *loopMem) Close() error {
	loopReg.Lock()
	m.closed = true
	loopReg.Unlock()
	return nil
}

func (loopMD) Register(buf []byte, _ uct.Access) (uct.Mem, error) {
	loopReg.Lock()
	defer loopReg.Unlock()
	m := &loopMem{id: loopReg.next, buf: buf}
	loopReg.next++
	loopReg.mems[m.id] = m
	return m, nil
}

func (md loopMD) Alloc(size int, a uct.Access) (uct.Mem, error) {
	return md.Register(make([]byte, size), a)
}

type loopRKey struct{ id uint64 }

func (loopRKey) Close() error { return nil }

func (loopMD) UnpackRKey(p []byte) (uct.RKey, error) {
	if len(p) != 8 {
		return nil, fmt.Errorf("loop rkey of %d bytes: %w", len(p), uct.ErrInvalidParam)
	}
	return loopRKey{binary.LittleEndian.Uint64(p)}, nil
}

func (loopMD) OpenIface(uct.IfaceParams) (uct.Iface, error) {
	loopReg.Lock()
	defer loopReg.Unlock()
	i := &loopIface{id: loopReg.next, events: uct.NewEventQueue(), wake: make(chan struct{}, 1)}
	loopReg.next++
	i.dev.Init("loop", uct.DeviceUp)
	loopReg.ifaces[i.id] = i
	return i, nil
}

func (loopMD) Close() error { return nil }

type amHandler struct {
	h   uct.AMHandler
	arg any
}

type loopMsg struct {
	id   uint8
	data []byte
}

const loopRxLen = 64

type loopIface struct {
	id       uint64
	handlers [uct.MaxAMID + 1]amHandler
	rx       []loopMsg
	eps      []*loopEP
	notify   uctkit.Notifier
	errs     uctkit.ErrorHandlerSlot
	events   *uct.EventQueue
	dev      uctkit.DeviceWatchers
	closed   bool
	wake     chan struct{}
	work     []*loopWork
}

// loopWork is an operation whose effect and completion happen in Progress.
type loopWork struct {
	ep       *loopEP
	fn       func()
	c        *uct.Completion
	canceled bool
}

func (i *loopIface) Attr() uct.IfaceAttr {
	return uct.IfaceAttr{
		Transport: "loop", Device: "loop",
		Cap: uct.CapAMShort | uct.CapAMBcopy | uct.CapAMZcopy | uct.CapPutShort | uct.CapPutBcopy |
			uct.CapPutZcopy | uct.CapGetBcopy | uct.CapGetZcopy | uct.CapAtomic32 | uct.CapAtomic64 |
			uct.CapPending | uct.CapCheckLiveness | uct.CapConnectToIface | uct.CapEventRecv,
		AMMaxShort: 128, AMMaxBcopy: 8192, AMMaxZcopy: 65536, AMMaxHeader: 32, AMMaxIOV: 4,
		PutMaxShort: 128, PutMaxBcopy: 8192, PutMaxZcopy: 1 << 20, GetMaxBcopy: 8192, GetMaxZcopy: 1 << 20,
		AddressLen: 8,
	}
}

func (i *loopIface) Address() []byte { return binary.LittleEndian.AppendUint64(nil, i.id) }

func (i *loopIface) SetAMHandler(id uint8, h uct.AMHandler, arg any) error {
	if id > uct.MaxAMID {
		return uct.ErrInvalidParam
	}
	i.handlers[id] = amHandler{h, arg}
	return nil
}

func (i *loopIface) Connect(addr []byte, _ uct.EPParams) (uct.Endpoint, error) {
	if len(addr) != 8 {
		return nil, uct.NewOpError("loop", "connect", "", uct.ErrInvalidAddress, nil)
	}
	loopReg.Lock()
	peer, ok := loopReg.ifaces[binary.LittleEndian.Uint64(addr)]
	loopReg.Unlock()
	if !ok || peer.closed {
		return nil, uct.NewOpError("loop", "connect", fmt.Sprintf("%x", addr), uct.ErrUnreachable, nil)
	}
	ep := &loopEP{iface: i, peer: peer}
	i.eps = append(i.eps, ep)
	return ep, nil
}

func (i *loopIface) Progress() int {
	n := 0
	for k := 0; k < 8 && len(i.work) > 0 && !i.closed; k++ {
		w := i.work[0]
		i.work = i.work[1:]
		if w.canceled {
			w.c.Invoke(uct.ErrCanceled)
		} else {
			if w.fn != nil {
				w.fn()
			}
			w.c.Invoke(nil)
		}
		n++
	}
	for len(i.rx) > 0 && !i.closed {
		m := i.rx[0]
		i.rx = i.rx[1:]
		if h := i.handlers[m.id]; h.h != nil {
			h.h(h.arg, m.data, 0)
		}
		i.notify.Completed(uct.CompletionInfo{Queue: uct.NotifyRecv})
		n++
	}
	for _, ep := range i.eps {
		for len(ep.pending) > 0 && len(ep.peer.rx) < loopRxLen {
			r := ep.pending[0]
			ep.pending = ep.pending[1:]
			ep.inDisp = true
			err := r.Dispatch()
			ep.inDisp = false
			if err == uct.ErrNoResource {
				ep.pending = append([]uct.PendingRequest{r}, ep.pending...)
				break
			}
			n++
		}
	}
	return n
}

func (i *loopIface) Arm() error {
	if len(i.rx) > 0 {
		return uct.ErrBusy
	}
	return nil
}
func (i *loopIface) Wait(ctx context.Context) error {
	select {
	case <-i.wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (i *loopIface) Wake() {
	select {
	case i.wake <- struct{}{}:
	default:
	}
}
func (i *loopIface) Notify(h uct.NotifyHandler, arg any) error {
	return i.notify.Notify(h, arg)
}
func (i *loopIface) Flush(c *uct.Completion) error {
	if len(i.work) == 0 {
		return nil
	}
	i.work = append(i.work, &loopWork{c: c})
	return uct.ErrInProgress
}
func (i *loopIface) Fence() error                              { return nil }
func (i *loopIface) SetErrorHandler(h uct.ErrorHandler, a any) { i.errs.Set(h, a) }
func (i *loopIface) Events() *uct.EventQueue                   { return i.events }
func (i *loopIface) WatchDevice(fn func(uct.DeviceStatusEvent)) (*uct.Watch, error) {
	return i.dev.Register(fn)
}

func (i *loopIface) Close() error {
	if i.closed {
		return nil
	}
	i.closed = true
	for _, w := range i.work {
		w.c.Invoke(uct.ErrCanceled)
	}
	i.work = nil
	for _, ep := range i.eps {
		ep.closed = true
	}
	i.notify.Cancel()
	i.events.Close()
	return nil
}

type loopEP struct {
	iface   *loopIface
	peer    *loopIface
	pending []uct.PendingRequest
	err     error
	closed  bool
	inDisp  bool
}

func (e *loopEP) Iface() uct.Iface { return e.iface }
func (e *loopEP) Peer() string     { return fmt.Sprintf("loop %d", e.peer.id) }

// later runs fn now if nothing is queued and there is no completion, else
// queues it for Progress.
func (e *loopEP) later(c *uct.Completion, fn func()) error {
	if c == nil && len(e.iface.work) == 0 {
		fn()
		return nil
	}
	e.iface.work = append(e.iface.work, &loopWork{ep: e, fn: fn, c: c})
	if c == nil {
		return nil
	}
	return uct.ErrInProgress
}

func (e *loopEP) cancelWork() {
	for _, w := range e.iface.work {
		if w.ep == e {
			w.canceled = true
		}
	}
}

func (e *loopEP) fail(op string, st uct.Status) error {
	return uct.NewOpError("loop", op, e.Peer(), st, nil)
}

func (e *loopEP) check(op string) error {
	if e.closed {
		return e.fail(op, uct.ErrClosed)
	}
	if e.err != nil {
		return e.fail(op, uct.StatusOf(e.err))
	}
	return nil
}

func (e *loopEP) send(op string, id uint8, data []byte) error {
	if err := e.check(op); err != nil {
		return err
	}
	if id > uct.MaxAMID {
		return e.fail(op, uct.ErrInvalidParam)
	}
	if len(e.peer.rx) >= loopRxLen || (len(e.pending) > 0 && !e.inDisp) {
		return uct.ErrNoResource
	}
	e.peer.rx = append(e.peer.rx, loopMsg{id, data})
	e.peer.Wake()
	return nil
}

func (e *loopEP) AMShort(id uint8, header uint64, payload []byte) error {
	if len(payload) > e.iface.Attr().AMMaxShort {
		return e.fail("am_short", uct.ErrInvalidParam)
	}
	return e.send("am_short", id, append(binary.LittleEndian.AppendUint64(nil, header), payload...))
}

func (e *loopEP) AMBcopy(id uint8, header, payload []byte) (int, error) {
	if len(header)+len(payload) > e.iface.Attr().AMMaxBcopy {
		return 0, e.fail("am_bcopy", uct.ErrInvalidParam)
	}
	d := append(append([]byte{}, header...), payload...)
	if err := e.send("am_bcopy", id, d); err != nil {
		return 0, err
	}
	return len(d), nil
}

func (e *loopEP) AMZcopy(id uint8, header []byte, iov [][]byte, comp *uct.Completion) error {
	d := append([]byte{}, header...)
	for _, v := range iov {
		d = append(d, v...)
	}
	if err := e.send("am_zcopy", id, d); err != nil {
		return err
	}
	return e.later(comp, func() {})
}

func (e *loopEP) mem(op string, raddr uint64, n int, rk uct.RKey) ([]byte, error) {
	if err := e.check(op); err != nil {
		return nil, err
	}
	k, ok := rk.(loopRKey)
	if !ok {
		return nil, e.fail(op, uct.ErrInvalidParam)
	}
	loopReg.Lock()
	m := loopReg.mems[k.id]
	loopReg.Unlock()
	if m == nil || m.closed || raddr>>40 != k.id {
		return nil, e.fail(op, uct.ErrRemoteProtection)
	}
	off := raddr & (1<<40 - 1)
	if off+uint64(n) > uint64(len(m.buf)) || off+uint64(n) < off {
		return nil, e.fail(op, uct.ErrInvalidAddress)
	}
	return m.buf[off : off+uint64(n)], nil
}

func (e *loopEP) PutShort(buf []byte, raddr uint64, rk uct.RKey) error {
	d, err := e.mem("put_short", raddr, len(buf), rk)
	if err != nil {
		return err
	}
	b := append([]byte(nil), buf...)
	return e.later(nil, func() { copy(d, b) })
}
func (e *loopEP) PutBcopy(buf []byte, raddr uint64, rk uct.RKey) (int, error) {
	return len(buf), e.PutShort(buf, raddr, rk)
}
func (e *loopEP) PutZcopy(iov [][]byte, raddr uint64, rk uct.RKey, c *uct.Completion) error {
	n := 0
	for _, v := range iov {
		n += len(v)
	}
	d, err := e.mem("put_zcopy", raddr, n, rk)
	if err != nil {
		return err
	}
	return e.later(c, func() {
		o := 0
		for _, v := range iov {
			o += copy(d[o:], v)
		}
	})
}
func (e *loopEP) GetBcopy(dst []byte, raddr uint64, rk uct.RKey, c *uct.Completion) error {
	d, err := e.mem("get", raddr, len(dst), rk)
	if err != nil {
		return err
	}
	if c == nil {
		return e.fail("get", uct.ErrInvalidParam)
	}
	return e.later(c, func() { copy(dst, d) })
}
func (e *loopEP) GetZcopy(iov [][]byte, raddr uint64, rk uct.RKey, c *uct.Completion) error {
	n := 0
	for _, v := range iov {
		n += len(v)
	}
	d, err := e.mem("get", raddr, n, rk)
	if err != nil {
		return err
	}
	return e.later(c, func() {
		o := 0
		for _, v := range iov {
			o += copy(v, d[o:])
		}
	})
}

func (e *loopEP) AtomicPost(op uct.AtomicOp, size int, value, raddr uint64, rk uct.RKey) error {
	var r uint64
	return e.AtomicFetch(op, size, value, 0, &r, raddr, rk, nil)
}

func (e *loopEP) AtomicFetch(op uct.AtomicOp, size int, value, compare uint64, result *uint64, raddr uint64, rk uct.RKey, c *uct.Completion) error {
	if size != 4 && size != 8 {
		return e.fail("atomic", uct.ErrInvalidParam)
	}
	d, err := e.mem("atomic", raddr, size, rk)
	if err != nil {
		return err
	}
	return e.later(c, func() {
		var old uint64
		if size == 4 {
			old = uint64(binary.NativeEndian.Uint32(d))
		} else {
			old = binary.NativeEndian.Uint64(d)
		}
		nv := old
		switch op {
		case uct.AtomicAdd:
			nv = old + value
		case uct.AtomicAnd:
			nv = old & value
		case uct.AtomicOr:
			nv = old | value
		case uct.AtomicXor:
			nv = old ^ value
		case uct.AtomicSwap:
			nv = value
		case uct.AtomicCSwap:
			if old == compare {
				nv = value
			}
		}
		if size == 4 {
			binary.NativeEndian.PutUint32(d, uint32(nv))
		} else {
			binary.NativeEndian.PutUint64(d, nv)
		}
		*result = old
	})
}

func (e *loopEP) Flush(cancel bool, c *uct.Completion) error {
	if err := e.check("flush"); err != nil {
		return err
	}
	if cancel {
		e.cancelWork()
	}
	for _, w := range e.iface.work {
		if w.ep == e {
			e.iface.work = append(e.iface.work, &loopWork{ep: e, c: c})
			return uct.ErrInProgress
		}
	}
	return nil
}
func (e *loopEP) Fence() error { return nil }
func (e *loopEP) PendingAdd(r uct.PendingRequest) error {
	if len(e.peer.rx) < loopRxLen && len(e.pending) == 0 {
		return uct.ErrBusy
	}
	e.pending = append(e.pending, r)
	return nil
}
func (e *loopEP) PendingPurge(cb func(uct.PendingRequest)) {
	for _, r := range e.pending {
		cb(r)
	}
	e.pending = nil
}
func (e *loopEP) CheckLiveness(*uct.Completion) error {
	if err := e.check("check_liveness"); err != nil {
		return err
	}
	if e.peer.closed {
		e.err = e.fail("check_liveness", uct.ErrConnectionReset)
		return e.err
	}
	return nil
}
func (e *loopEP) Err() error { return e.err }
func (e *loopEP) Close() error {
	if !e.closed {
		e.closed = true
		e.cancelWork()
	}
	return nil
}

func TestRunOnLoop(t *testing.T) {
	Run(t, func(t testing.TB) *Pair {
		md := loopMD{}
		a, err := md.OpenIface(uct.IfaceParams{})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := md.OpenIface(uct.IfaceParams{})
		return &Pair{A: a, B: b, MDA: md, MDB: md}
	})
}

func BenchmarkLoop(b *testing.B) {
	Bench(b, func(t testing.TB) *Pair {
		md := loopMD{}
		a, _ := md.OpenIface(uct.IfaceParams{})
		bb, _ := md.OpenIface(uct.IfaceParams{})
		return &Pair{A: a, B: bb, MDA: md, MDB: md}
	})
}
