package rc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"

	"go.uber.org/multierr"

	"github.com/ucgo/ucgo/transport/rc/verbs"
	"github.com/ucgo/ucgo/uct"
)

// opKind is what an outstanding operation is.
type opKind uint8

const (
	opFree opKind = iota
	opSend
	opRMA
	opAtomic
)

// op is one operation outstanding on the iface: one signaled work request
// at a time (an emulated atomic posts its next compare-and-swap when the
// previous one completes). Its WR id is its slot index and generation.
type op struct {
	kind   opKind
	gen    uint32
	ep     *Endpoint
	name   string
	comp   *uct.Completion
	seq    uint64
	bounce int32
	mrs    []*verbs.MR
	result *uint64

	// emulated atomics: CAS loop on the aligned 64-bit word waddr
	emul    bool
	aop     uct.AtomicOp
	size    int
	off     int // byte offset of the operand in the word
	value   uint64
	compare uint64
	guess   uint64
	waddr   uint64
	rkey    uint32
}

func (o *op) wrid(idx int32) uint64 { return uint64(o.gen)<<32 | uint64(uint32(idx)) }

type flushWaiter struct {
	seq  uint64 // complete once every op with a smaller seq is done
	comp *uct.Completion
}

// Endpoint is a connection to one peer iface over one RC QP.
type Endpoint struct {
	it      *Iface
	qp      *verbs.QP
	conn    *net.TCPConn
	peer    Address
	peerQPN uint32
	name    string

	credits int
	sqUsed  int
	fence   bool

	nextSeq uint64
	baseSeq uint64
	done    []bool // done[i]: op baseSeq+i completed
	flushes []flushWaiter

	pending     []uct.PendingRequest
	inPendList  bool
	dispatching bool

	// emulated atomics: one runs, the others wait (op slot indexes)
	emulActive bool
	emulWait   []int32
	lastValid  bool
	lastAddr   uint64
	lastWord   uint64

	err       error
	canceling bool
	closed    bool
	closing   atomic.Bool
	asyncErr  atomic.Pointer[error]
}

// Iface returns the endpoint's iface.
func (ep *Endpoint) Iface() uct.Iface { return ep.it }

// Peer names the remote QP.
func (ep *Endpoint) Peer() string { return ep.name }

// Err is nil while the endpoint is healthy, else its fatal error.
func (ep *Endpoint) Err() error {
	if ep.err == nil {
		if p := ep.asyncErr.Load(); p != nil {
			return *p
		}
	}
	return ep.err
}

func (ep *Endpoint) opErr(op string, st uct.Status, cause error) error {
	return uct.NewOpError(transportName, op, ep.name, st, cause)
}

// check fails an operation fast on a closed, failed or link-down endpoint.
func (ep *Endpoint) check(op string) error {
	if ep.closed || ep.it.isClosed.Load() {
		return ep.opErr(op, uct.ErrClosed, nil)
	}
	if ep.err == nil {
		if p := ep.asyncErr.Load(); p != nil {
			ep.fail(*p)
		}
	}
	if ep.err != nil {
		return ep.opErr(op, uct.StatusOf(ep.err), ep.err)
	}
	if ep.it.linkDown.Load() {
		// The link may come back: the endpoint stays healthy.
		return ep.opErr(op, uct.ErrRouteLost, fmt.Errorf("link of %s is down", ep.it.dev.Name()))
	}
	return nil
}

// hasRoom reports whether one more WR (and, for am, one credit and one
// bounce buffer) can be posted.
func (ep *Endpoint) hasRoom(am bool) bool {
	it := ep.it
	if ep.sqUsed >= sqDepth || len(it.freeOps) == 0 || len(it.freeTx) == 0 {
		return false
	}
	return !am || ep.credits > 0
}

// noRoom is the back-pressure check of an operation: pending requests go
// first.
func (ep *Endpoint) noRoom(am bool) bool {
	return (len(ep.pending) > 0 && !ep.dispatching) || !ep.hasRoom(am)
}

// fail puts the endpoint in error state with err (once): the error
// handler is called and an EventEndpointError posted.
func (ep *Endpoint) fail(err error) {
	if ep.err != nil {
		return
	}
	ep.err = err
	if ep.qp != nil {
		ep.qp.Modify(&verbs.QPAttr{State: verbs.QPSErr}, verbs.QPAttrState)
	}
	if ep.closed {
		return
	}
	it := ep.it
	it.errh.Call(ep, err)
	it.events.Post(&uct.Event{Type: uct.EventEndpointError, Object: "ep " + ep.name, Owner: ep, Endpoint: ep, Err: err})
	if len(ep.pending) > 0 {
		it.wantDispatch(ep)
	}
}

// newOp takes an op slot (the caller checked there is one) and numbers it.
func (ep *Endpoint) newOp(kind opKind, name string, comp *uct.Completion) (*op, int32) {
	it := ep.it
	idx := it.freeOps[len(it.freeOps)-1]
	it.freeOps = it.freeOps[:len(it.freeOps)-1]
	o := &it.ops[idx]
	o.kind, o.ep, o.name, o.comp = kind, ep, name, comp
	o.bounce = -1
	o.gen++
	return o, idx
}

// freeOp returns a slot that was never posted.
func (ep *Endpoint) freeOp(o *op, idx int32) {
	it := ep.it
	ep.releaseRes(o)
	*o = op{gen: o.gen}
	it.freeOps = append(it.freeOps, idx)
}

func (ep *Endpoint) releaseRes(o *op) {
	it := ep.it
	if o.bounce >= 0 {
		it.freeTx = append(it.freeTx, o.bounce)
		o.bounce = -1
	}
	for _, mr := range o.mrs {
		mr.Dereg()
	}
	o.mrs = nil
}

// takeBounce gives o a bounce buffer and returns the offset in txBuf of
// its message bytes (segSize of them; an AM's header byte is the one
// before).
func (ep *Endpoint) takeBounce(o *op) int {
	it := ep.it
	b := it.freeTx[len(it.freeTx)-1]
	it.freeTx = it.freeTx[:len(it.freeTx)-1]
	o.bounce = b
	return int(b)*bufSize + bodyOff
}

// post posts wr for o (signaled, fenced if a fence is due) and numbers o
// as a new logical operation if first is set.
func (ep *Endpoint) post(o *op, idx int32, wr *verbs.SendWR, first bool) error {
	wr.ID = o.wrid(idx)
	wr.Flags |= verbs.SendSignaled
	if ep.fence {
		wr.Flags |= verbs.SendFence
	}
	if _, err := ep.qp.PostSend(*wr); err != nil {
		return err
	}
	ep.fence = false
	ep.sqUsed++
	if first {
		o.seq = ep.nextSeq
		ep.nextSeq++
		ep.done = append(ep.done, false)
	}
	return nil
}

// postNew posts a fresh op; on failure the slot is freed and the error
// returned as the operation's.
func (ep *Endpoint) postNew(o *op, idx int32, wr *verbs.SendWR) error {
	if err := ep.post(o, idx, wr, true); err != nil {
		name := o.name
		ep.freeOp(o, idx)
		if errors.Is(err, uct.ErrNoResource) {
			return uct.ErrNoResource
		}
		return ep.opErr(name, uct.OK, err)
	}
	return nil
}

func (ep *Endpoint) inline(n int) []byte {
	it := ep.it
	return it.txBuf[txCount*bufSize : txCount*bufSize+n]
}

func (ep *Endpoint) inlineSGE(n int) verbs.SGE { return ep.it.txMR.SGE(txCount*bufSize, n) }

// AMShort sends the AM header, header (8 bytes, little endian) and
// payload inline.
func (ep *Endpoint) AMShort(id uint8, header uint64, payload []byte) error {
	if id > uct.MaxAMID || amHdrLen+8+len(payload) > ep.it.maxInline {
		return ep.opErr("am_short", uct.ErrInvalidParam, fmt.Errorf("id %d, %d payload bytes", id, len(payload)))
	}
	if err := ep.check("am_short"); err != nil {
		return err
	}
	if ep.noRoom(true) {
		return uct.ErrNoResource
	}
	n := amHdrLen + 8 + len(payload)
	b := ep.inline(n)
	b[0] = id
	binary.LittleEndian.PutUint64(b[amHdrLen:], header)
	copy(b[amHdrLen+8:], payload)
	o, idx := ep.newOp(opSend, "am_short", nil)
	sg := ep.it.sge[:1]
	sg[0] = ep.inlineSGE(n)
	wr := verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendInline, SG: sg}
	if err := ep.postNew(o, idx, &wr); err != nil {
		return err
	}
	ep.credits--
	return nil
}

// amBuf makes wr a SEND of the AM header (id) and n message bytes, as
// inline data if they are few enough and from a bounce buffer of o
// otherwise, and returns the n bytes to build the message in.
func (ep *Endpoint) amBuf(o *op, id uint8, n int, wr *verbs.SendWR) []byte {
	it := ep.it
	sg := it.sge[:1]
	wr.Opcode, wr.SG = verbs.WRSend, sg
	var b []byte
	if amHdrLen+n <= it.maxInline {
		b = ep.inline(amHdrLen + n)
		sg[0] = ep.inlineSGE(amHdrLen + n)
		wr.Flags |= verbs.SendInline
	} else {
		off := ep.takeBounce(o) - amHdrLen
		b = it.txBuf[off : off+amHdrLen+n]
		sg[0] = it.txMR.SGE(off, amHdrLen+n)
	}
	b[0] = id
	return b[amHdrLen:]
}

// AMBcopy copies header and payload into a bounce buffer (or inline) and
// sends them as one message.
func (ep *Endpoint) AMBcopy(id uint8, header, payload []byte) (int, error) {
	n := len(header) + len(payload)
	if id > uct.MaxAMID || n > segSize {
		return 0, ep.opErr("am_bcopy", uct.ErrInvalidParam, fmt.Errorf("id %d, %d bytes > %d", id, n, segSize))
	}
	if err := ep.check("am_bcopy"); err != nil {
		return 0, err
	}
	if ep.noRoom(true) {
		return 0, uct.ErrNoResource
	}
	o, idx := ep.newOp(opSend, "am_bcopy", nil)
	var wr verbs.SendWR
	b := ep.amBuf(o, id, n, &wr)
	copy(b[copy(b, header):], payload)
	if err := ep.postNew(o, idx, &wr); err != nil {
		return 0, err
	}
	ep.credits--
	return n, nil
}

// regIOV registers each non-empty buffer of iov for the op's lifetime and
// fills sg from index start.
func (ep *Endpoint) regIOV(o *op, iov [][]byte, sg []verbs.SGE, access verbs.Access) ([]verbs.SGE, error) {
	for _, b := range iov {
		if len(b) == 0 {
			continue
		}
		mr, err := ep.it.md.pd.RegMR(b, access)
		if err != nil {
			return sg, err
		}
		o.mrs = append(o.mrs, mr)
		sg = append(sg, mr.SGE(0, len(b)))
	}
	return sg, nil
}

func iovLen(iov [][]byte) int {
	n := 0
	for _, b := range iov {
		n += len(b)
	}
	return n
}

// AMZcopy sends header followed by iov as one message. A message fits
// one bounce buffer (AMMaxZcopy is segSize), and it is copied there like
// AMBcopy's: copying at most segSize bytes costs less than registering
// iov and holding it until the peer's ACK, which a sender waiting for its
// completion would wait a round trip for. AMZcopy therefore completes at
// once (it returns nil and comp is not invoked); iov is free when it
// returns.
func (ep *Endpoint) AMZcopy(id uint8, header []byte, iov [][]byte, comp *uct.Completion) error {
	n := len(header) + iovLen(iov)
	if id > uct.MaxAMID || len(header) > amMaxHeader || len(iov) > maxIOV || n > segSize {
		return ep.opErr("am_zcopy", uct.ErrInvalidParam, fmt.Errorf("id %d, header %d, %d iov, %d bytes", id, len(header), len(iov), n))
	}
	if err := ep.check("am_zcopy"); err != nil {
		return err
	}
	if ep.noRoom(true) {
		return uct.ErrNoResource
	}
	o, idx := ep.newOp(opSend, "am_zcopy", nil)
	var wr verbs.SendWR
	b := ep.amBuf(o, id, n, &wr)
	pos := copy(b, header)
	for _, v := range iov {
		pos += copy(b[pos:], v)
	}
	if err := ep.postNew(o, idx, &wr); err != nil {
		return err
	}
	ep.credits--
	return nil
}

func (ep *Endpoint) rkeyOf(op string, rk uct.RKey) (uint32, error) {
	k, ok := rk.(*rkey)
	if !ok || k == nil {
		return 0, ep.opErr(op, uct.ErrInvalidParam, fmt.Errorf("remote key %T is not an rc key", rk))
	}
	return k.key, nil
}

// PutShort writes buf inline with an RDMA WRITE.
func (ep *Endpoint) PutShort(buf []byte, raddr uint64, rk uct.RKey) error {
	if len(buf) > ep.it.maxInline {
		return ep.opErr("put_short", uct.ErrInvalidParam, fmt.Errorf("%d bytes > %d", len(buf), ep.it.maxInline))
	}
	_, err := ep.putCopy("put_short", buf, raddr, rk)
	return err
}

// PutBcopy copies buf into a bounce buffer (or inline) and writes it with
// an RDMA WRITE.
func (ep *Endpoint) PutBcopy(buf []byte, raddr uint64, rk uct.RKey) (int, error) {
	if len(buf) > segSize {
		return 0, ep.opErr("put_bcopy", uct.ErrInvalidParam, fmt.Errorf("%d bytes > %d", len(buf), segSize))
	}
	return ep.putCopy("put_bcopy", buf, raddr, rk)
}

func (ep *Endpoint) putCopy(name string, buf []byte, raddr uint64, rk uct.RKey) (int, error) {
	key, err := ep.rkeyOf(name, rk)
	if err != nil {
		return 0, err
	}
	if err := ep.check(name); err != nil {
		return 0, err
	}
	if ep.noRoom(false) {
		return 0, uct.ErrNoResource
	}
	o, idx := ep.newOp(opRMA, name, nil)
	wr := verbs.SendWR{Opcode: verbs.WRRDMAWrite, RemoteAddr: raddr, RKey: key}
	sg := ep.it.sge[:1]
	n := len(buf)
	if n <= ep.it.maxInline {
		copy(ep.inline(n), buf)
		sg[0] = ep.inlineSGE(n)
		wr.Flags = verbs.SendInline
	} else {
		off := ep.takeBounce(o)
		copy(ep.it.txBuf[off:off+n], buf)
		sg[0] = ep.it.txMR.SGE(off, n)
	}
	wr.SG = sg
	if err := ep.postNew(o, idx, &wr); err != nil {
		return 0, err
	}
	return n, nil
}

// PutZcopy writes iov (registered for the operation) with one RDMA WRITE.
func (ep *Endpoint) PutZcopy(iov [][]byte, raddr uint64, rk uct.RKey, comp *uct.Completion) error {
	return ep.rmaZcopy("put_zcopy", verbs.WRRDMAWrite, iov, raddr, rk, comp)
}

// GetBcopy reads into dst with an RDMA READ.
func (ep *Endpoint) GetBcopy(dst []byte, raddr uint64, rk uct.RKey, comp *uct.Completion) error {
	return ep.rmaZcopy("get_bcopy", verbs.WRRDMARead, [][]byte{dst}, raddr, rk, comp)
}

// GetZcopy reads into iov with one RDMA READ.
func (ep *Endpoint) GetZcopy(iov [][]byte, raddr uint64, rk uct.RKey, comp *uct.Completion) error {
	return ep.rmaZcopy("get_zcopy", verbs.WRRDMARead, iov, raddr, rk, comp)
}

func (ep *Endpoint) rmaZcopy(name string, opc verbs.WROpcode, iov [][]byte, raddr uint64, rk uct.RKey, comp *uct.Completion) error {
	n := iovLen(iov)
	if len(iov) > maxIOV || n > maxZcopy {
		return ep.opErr(name, uct.ErrInvalidParam, fmt.Errorf("%d iov, %d bytes", len(iov), n))
	}
	key, err := ep.rkeyOf(name, rk)
	if err != nil {
		return err
	}
	if err := ep.check(name); err != nil {
		return err
	}
	if ep.noRoom(false) {
		return uct.ErrNoResource
	}
	o, idx := ep.newOp(opRMA, name, comp)
	sg, err := ep.regIOV(o, iov, ep.it.sge[:0], verbs.AccessLocalWrite)
	if err != nil {
		ep.freeOp(o, idx)
		return ep.opErr(name, uct.ErrNoMemory, err)
	}
	wr := verbs.SendWR{Opcode: opc, SG: sg, RemoteAddr: raddr, RKey: key}
	if err := ep.postNew(o, idx, &wr); err != nil {
		return err
	}
	return uct.ErrInProgress
}

// CheckLiveness posts a zero-length RDMA WRITE: its ACK proves the peer's
// QP is alive.
func (ep *Endpoint) CheckLiveness(comp *uct.Completion) error {
	if err := ep.check("check_liveness"); err != nil {
		return err
	}
	if ep.noRoom(false) {
		return uct.ErrNoResource
	}
	o, idx := ep.newOp(opRMA, "check_liveness", comp)
	wr := verbs.SendWR{Opcode: verbs.WRRDMAWrite}
	if err := ep.postNew(o, idx, &wr); err != nil {
		return err
	}
	return uct.ErrInProgress
}

// outstanding reports whether any operation is incomplete.
func (ep *Endpoint) outstanding() bool { return ep.baseSeq != ep.nextSeq }

func (ep *Endpoint) addFlushWaiter(comp *uct.Completion) {
	ep.flushes = append(ep.flushes, flushWaiter{seq: ep.nextSeq, comp: comp})
}

// Flush completes when every operation posted so far has completed; with
// cancel, the QP is moved to ERR first, so outstanding operations
// complete with ErrCanceled and the endpoint stays in that state.
func (ep *Endpoint) Flush(cancel bool, comp *uct.Completion) error {
	if ep.closed || ep.it.isClosed.Load() {
		return ep.opErr("ep_flush", uct.ErrClosed, nil)
	}
	if cancel && ep.err == nil {
		ep.canceling = true
		ep.err = ep.opErr("ep_flush", uct.ErrCanceled, nil)
		ep.qp.Modify(&verbs.QPAttr{State: verbs.QPSErr}, verbs.QPAttrState)
	}
	if !ep.outstanding() {
		if ep.err != nil && !cancel {
			return ep.opErr("ep_flush", uct.StatusOf(ep.err), ep.err)
		}
		return nil
	}
	ep.addFlushWaiter(comp)
	return uct.ErrInProgress
}

// Fence orders the next operation after every earlier one.
func (ep *Endpoint) Fence() error {
	ep.fence = true
	return nil
}

// PendingAdd queues r until resources free up; ErrBusy if there is room.
func (ep *Endpoint) PendingAdd(r uct.PendingRequest) error {
	if ep.closed {
		return ep.opErr("pending_add", uct.ErrClosed, nil)
	}
	if len(ep.pending) == 0 && ep.err == nil && ep.hasRoom(true) {
		return uct.ErrBusy
	}
	ep.pending = append(ep.pending, r)
	ep.it.wantDispatch(ep)
	return nil
}

// PendingPurge removes every queued request.
func (ep *Endpoint) PendingPurge(cb func(uct.PendingRequest)) {
	p := ep.pending
	ep.pending = nil
	for _, r := range p {
		if cb != nil {
			cb(r)
		}
	}
}

// dispatch runs queued requests in order while they post.
func (ep *Endpoint) dispatch() int {
	n := 0
	ep.dispatching = true
	defer func() { ep.dispatching = false }()
	for len(ep.pending) > 0 {
		if ep.err == nil && !ep.hasRoom(false) {
			break
		}
		r := ep.pending[0]
		ep.pending = ep.pending[1:]
		if err := r.Dispatch(); errors.Is(err, uct.ErrNoResource) {
			ep.pending = append([]uct.PendingRequest{r}, ep.pending...)
			break
		}
		n++
	}
	return n
}

// Close sends DREQ so the peer destroys its QP, moves the QP to ERR and
// completes every outstanding operation with ErrCanceled. It returns once
// the async events that name the endpoint and were received have been
// acked (at most verbs.AckWait; see CloseContext).
func (ep *Endpoint) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), verbs.AckWait)
	defer cancel()
	return ep.CloseContext(ctx)
}

// CloseContext is Close with the wait for acks bounded by ctx; when ctx
// ends first, the endpoint is closed all the same and the error wraps
// uct.ErrTimedOut. A later Close only waits for the acks again.
func (ep *Endpoint) CloseContext(ctx context.Context) error {
	if ep.closed {
		return ep.it.events.WaitAcksContext(ctx, ep)
	}
	ep.closed = true
	ep.closing.Store(true)
	it := ep.it
	if ep.conn != nil {
		ep.conn.Write((&cmMsg{Type: cmDREQ, QPN: ep.peerQPN}).encode())
		ep.conn.Close()
	}
	ep.qp.Modify(&verbs.QPAttr{State: verbs.QPSErr}, verbs.QPAttrState)
	canceled := ep.opErr("ep_close", uct.ErrCanceled, nil)
	ep.emulWait = nil
	for i := range it.ops {
		o := &it.ops[i]
		if o.kind != opFree && o.ep == ep {
			it.finish(o, int32(i), canceled)
		}
	}
	for _, w := range ep.flushes {
		w.comp.Invoke(canceled)
	}
	ep.flushes = nil
	p := ep.pending
	ep.pending = nil
	for _, r := range p {
		if c, ok := r.(uct.PendingCanceler); ok {
			c.CancelPending(canceled)
		}
	}
	it.mu.Lock()
	delete(it.eps, ep.qp.QPNum())
	it.mu.Unlock()
	it.notifier.Forget(ep)
	// The endpoint's events name it: wait until those received are acked.
	return multierr.Append(ep.qp.CloseContext(ctx), it.events.WaitAcksContext(ctx, ep))
}

// watchLifeline waits for the connection manager connection to end. The
// passive side never writes after REP but DREQ when its iface closes: the
// endpoint then fails with ErrConnectionReset. A connection that ends
// without it (EOF or reset: the kernel closed the socket of a process that
// died) fails it with ErrPeerFailed, any other end (TCP keepalive timed
// out, unreachable) with ErrConnectionReset. The error is applied by the
// next Progress or operation.
func (ep *Endpoint) watchLifeline() {
	m, err := readCM(ep.conn)
	if ep.closing.Load() {
		return
	}
	var e error
	switch {
	case err == nil && m.Type == cmDREQ:
		e = ep.opErr("connection", uct.ErrConnectionReset, errors.New("peer iface closed"))
	case err == nil && m.Type == cmDOWN:
		e = ep.opErr("connection", uct.ErrRemoteNICFailed, errors.New("peer's device was disabled"))
	case err == nil:
		e = ep.opErr("connection", uct.ErrConnectionReset, fmt.Errorf("connection manager sent message type %d", m.Type))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		e = ep.opErr("connection", uct.ErrPeerFailed, fmt.Errorf("connection manager link ended without DREQ: %w", err))
	default:
		e = ep.opErr("connection", uct.ErrConnectionReset, fmt.Errorf("connection manager link ended: %w", err))
	}
	ep.asyncErr.CompareAndSwap(nil, &e)
	ep.qp.Modify(&verbs.QPAttr{State: verbs.QPSErr}, verbs.QPAttrState)
	ep.it.attention.Store(true)
	ep.it.Wake()
}
