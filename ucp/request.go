package ucp

import (
	"context"
	"runtime"
	"sync/atomic"

	"github.com/ucgo/ucgo/ucp/internal/match"
	"github.com/ucgo/ucgo/uct"
)

type reqKind uint8

const (
	kTagSend reqKind = iota + 1
	kTagRecv
	kAMSend
	kPut
	kGet
	kAtomic
	kAtomicFetch
	kFlush
	kClose
	kCtl    // internal control message (ATS, RTR, ATP, close)
	kAMRecv // AMMessage.RecvData of a rendezvous active message
)

var kindOp = [...]string{kTagSend: "tag_send", kTagRecv: "tag_recv", kAMSend: "am_send", kPut: "put", kGet: "get",
	kAtomic: "atomic_post", kAtomicFetch: "atomic_fetch", kFlush: "flush", kClose: "close", kCtl: "control",
	kAMRecv: "am_recv_data"}

// Info describes a completed request: for receives the message's length
// (also when it was truncated), tag and sending endpoint.
type Info struct {
	Length int
	Tag    uint64
	Sender *Endpoint
}

// Params are the optional parameters of an operation.
type Params struct {
	// Callback runs once when the request completes, from Progress (or a
	// Wait) on the goroutine that drives the worker, never inside the call
	// that started the operation.
	Callback func(r *Request)
	// UserData is returned by Request.UserData.
	UserData any
}

// Request is one non-blocking operation. It completes exactly once with
// its own status. Release returns it to the worker's pool; after Release
// the caller must not touch it. An operation that completed inside the
// call may return a nil *Request (see TagSend); every method treats nil
// as a request that completed with success: Done and Test report done,
// Wait and Err return nil, Info and UserData are zero, Cancel returns
// false and Release does nothing.
//
// The fields an eager tag send or receive sets are in reqEager, which
// putReq clears on every reuse; the rest of the request (the rendezvous,
// RMA, AM and control state) is cleared only after a request that
// touched it (deep), so that the eager path does not clear the whole
// request each time.
type Request struct {
	reqEager
	mr      match.Recv
	hdr     []byte // internal header / control message bytes
	ctlID   uint8
	iov     [1][]byte
	comp    uct.Completion
	reg     *regEntry // registered buffer (rendezvous)
	rkey    *RKey     // RMA
	ukey    *keyEntry // unpacked key of an RTR/RTS
	raddr   uint64
	aop     uct.AtomicOp
	value   uint64
	compare uint64
	result  *uint64
	amID    uint16
	amHdr   []byte
	amOff   int    // kAMSend, kTagSend in fragments: data bytes sent so far
	fragMid uint64 // kTagSend in fragments: its message id (tag_frag.go)
	slot    uint64 // rendezvous slot (0: none)
	closing bool   // kFlush that closes the endpoint afterwards
	flushN  int    // uct lane flushes outstanding
	rndvLen int    // receive: message length announced by RTS
	rndvSrc *Endpoint
	peerReq uint64 // the peer's rendezvous slot (ATS/ATP target)
	// a chunked transfer (startChunks): what is left to post
	xbuf   []byte
	xoff   int
	xraddr uint64
	xkey   uct.RKey
	xlane  int
	xput   bool
	stripe *stripe // a transfer striped over rails (stripe.go)
	// the rail gate's generation the transfer counts in, the gate's
	// era while it counts as in flight there, and that it waits for a
	// probe to end (railgate.go)
	gateGen, gateEra uint32
	gateHold         bool
	// a transfer a rail took whole (stripe_load.go): the lane and the
	// bytes counted in its load (0: none)
	wlane  int
	wbytes int
	// failover (replay.go): the whole transfer, and that it must move
	// to another lane once its chunks have reported
	xall  []byte
	xredo bool
	xregs []*regEntry     // registrations of a rendezvous buffer on the other lanes' memory domains
	xc    *uct.Completion // the chunks' completion: &comp, or one per attempt after a failover (replay.go)
	// zombie: completed by its endpoint's close or failure while a uct
	// operation may still report into comp (the lane is closed after the
	// worker lock is released), so it never returns to the pool.
	zombie bool
}

// reqEager is the part of a Request that every operation uses.
type reqEager struct {
	w *Worker
	// done is set by complete: done (atomic) in a thread-safe worker,
	// else fin, so that completing costs no locked instruction.
	done atomic.Bool
	fin  bool
	err  error
	info Info
	// notice is ErrProcFailedPending while a posted receive has been told
	// of a failure it has not yet reported through Wait/Test.
	notice   error
	cb       func(*Request)
	user     any
	kind     reqKind
	released bool
	autoRel  bool
	sync     bool // kTagSend: synchronous (always rendezvous)
	// deep: the request may have set fields outside reqEager (any
	// operation but an eager tag send or receive), so putReq clears all
	// of it.
	deep bool

	ep  *Endpoint
	buf []byte
	tag uint64

	prev, next *Request
	list       *reqList
}

// reqList is an intrusive FIFO of requests.
type reqList struct {
	head, tail *Request
	n          int
}

func (l *reqList) empty() bool { return l.head == nil }

func (l *reqList) push(r *Request) {
	r.list, r.prev, r.next = l, l.tail, nil
	if l.tail != nil {
		l.tail.next = r
	} else {
		l.head = r
	}
	l.tail = r
	l.n++
}

func (l *reqList) pushFront(r *Request) {
	r.list, r.prev, r.next = l, nil, l.head
	if l.head != nil {
		l.head.prev = r
	} else {
		l.tail = r
	}
	l.head = r
	l.n++
}

func (l *reqList) remove(r *Request) {
	if r.list != l {
		return
	}
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		l.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		l.tail = r.prev
	}
	r.prev, r.next, r.list = nil, nil, nil
	l.n--
}

// take empties the list and returns its requests in order.
func (l *reqList) take() []*Request {
	var out []*Request
	for r := l.head; r != nil; {
		nx := r.next
		r.prev, r.next, r.list = nil, nil, nil
		out = append(out, r)
		r = nx
	}
	*l = reqList{}
	return out
}

// Test reports whether the request completed, and its status. A posted
// receive told of a pending peer failure reports (false,
// ErrProcFailedPending) once: a *PendingError, not a final status.
func (r *Request) Test() (bool, error) {
	if r == nil {
		return true, nil
	}
	if r.isDone() {
		return true, r.err
	}
	r.w.Progress()
	if r.isDone() {
		return true, r.err
	}
	return false, r.takeNotice()
}

// takeNotice returns the pending-failure notice once; a notice whose
// failure was acknowledged meanwhile (ResumeMatching, Purge) is dropped.
func (r *Request) takeNotice() error {
	r.w.lock()
	n := r.notice
	r.notice = nil
	if n != nil && !r.w.m.Suspended() {
		n = nil
	}
	r.w.unlock()
	return n
}

// Done reports whether the request completed (without progressing).
func (r *Request) Done() bool { return r == nil || r.isDone() }

func (r *Request) isDone() bool { return r.fin || r.done.Load() }

// Err returns the completion status (nil while pending or on success).
func (r *Request) Err() error {
	if r != nil && r.isDone() {
		return r.err
	}
	return nil
}

// Info returns what is known about the request's message (receives).
func (r *Request) Info() Info {
	if r == nil {
		return Info{}
	}
	return r.info
}

// UserData returns Params.UserData.
func (r *Request) UserData() any {
	if r == nil {
		return nil
	}
	return r.user
}

// Wait progresses the worker until the request completes or ctx ends and
// returns the request's status. A posted receive told of a pending peer
// failure returns ErrProcFailedPending once and stays posted; Wait again
// to keep waiting. The errors returned while the request is still pending
// (a *PendingError, or ctx's error) are not final (see Final).
func (r *Request) Wait(ctx context.Context) error {
	if r == nil {
		return nil
	}
	spins := 0
	for {
		if r.isDone() {
			return r.err
		}
		if n := r.takeNotice(); n != nil {
			return n
		}
		if r.w.Progress() > 0 {
			spins = 0
			continue
		}
		if r.isDone() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		spins++
		switch {
		case spins < 256:
		case spins < 1024 || r.w.busy():
			runtime.Gosched()
		default:
			r.w.wait(ctx, r)
		}
	}
}

// Cancel cancels a request that has not started: a posted receive, or a
// send still queued on its endpoint. It completes with uct.ErrCanceled and
// Cancel returns true; otherwise it returns false and the request
// completes normally.
func (r *Request) Cancel() bool {
	if r == nil {
		return false
	}
	w := r.w
	w.lock()
	defer w.unlock()
	if r.isDone() {
		return false
	}
	switch {
	case r.kind == kTagRecv && r.mr.Posted():
		if !w.m.CancelRecv(&r.mr) {
			return false
		}
	case r.list != nil && r.ep != nil && r.list == &r.ep.queue && r.amOff == 0:
		r.ep.queue.remove(r)
	default:
		return false
	}
	w.complete(r, opErr(kindOp[r.kind], r.peerName(), uct.ErrCanceled))
	return true
}

func (r *Request) peerName() string {
	if r.ep != nil {
		return r.ep.name
	}
	return ""
}

// Release returns the request to the worker's pool, at once if it has
// completed, else when it completes (its callback still runs).
func (r *Request) Release() {
	if r == nil {
		return
	}
	w := r.w
	w.lock()
	switch {
	case r.released:
	case !r.isDone() || r.cb != nil && r.list == &w.doneq:
		r.autoRel = true
	default:
		w.putReq(r)
	}
	w.unlock()
}

// getReq takes a request from the pool (lock held).
func (w *Worker) getReq(kind reqKind, ep *Endpoint, p *Params) *Request {
	var r *Request
	if n := len(w.reqFree); n > 0 {
		r = w.reqFree[n-1]
		w.reqFree = w.reqFree[:n-1]
		r.released = false
	} else {
		r = &Request{reqEager: reqEager{w: w}}
		r.comp.Func = r.onComp
		r.mr.Data = r
	}
	r.kind, r.ep = kind, ep
	r.deep = kind != kTagSend && kind != kTagRecv
	if p != nil {
		r.cb, r.user = p.Callback, p.UserData
	}
	return r
}

func (w *Worker) putReq(r *Request) {
	if r.zombie {
		r.released = true
		return
	}
	switch {
	case r.deep:
		hdr := r.hdr[:0]
		fn := r.comp.Func
		*r = Request{hdr: hdr}
		r.comp.Func = fn
		r.mr = match.Recv{Data: r}
	case r.kind == kTagRecv:
		r.mr.Reset()
	}
	r.reqEager = reqEager{w: w, released: true}
	if len(w.reqFree) < 4096 {
		w.reqFree = append(w.reqFree, r)
	}
}
