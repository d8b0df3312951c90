package ucp

import "github.com/ucgo/ucgo/uct"

// Request completion. Every request completes here, once: by its
// operation's last step, by its uct completion (onComp), or, when its
// endpoint fails or closes first, with the endpoint's status
// (completeEP). Its status is an *Error naming the operation (opErr).

// opErr is the status of a request of operation op towards peer that
// failed with err; nil for nil.
func opErr(op, peer string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Peer: peer, Err: err}
}

// completeEP completes ep's requests (lock held): those still queued
// with queued, those stalled or in flight with inflight. The latter are
// zombies: their uct completions may still arrive and find them done.
func (w *Worker) completeEP(ep *Endpoint, queued, inflight error) {
	for _, r := range ep.queue.take() {
		w.complete(r, opErr(kindOp[r.kind], ep.name, queued))
	}
	for _, l := range []*reqList{&ep.stalled, &ep.inflight} {
		for _, r := range l.take() {
			r.zombie = true
			w.complete(r, opErr(kindOp[r.kind], ep.name, atomicOutcome(r, inflight)))
		}
	}
}

// complete finishes r with err (lock held). The callback is queued for the
// end of Progress.
func (w *Worker) complete(r *Request, err error) {
	if r.isDone() {
		return
	}
	if r.list != nil {
		r.list.remove(r)
	}
	if r.deep {
		w.completeDeep(r)
	}
	r.err = err
	r.notice = nil
	r.buf = nil
	if w.safe {
		r.done.Store(true)
		if w.asleep {
			w.Wake() // a Wait sleeps, perhaps for r
		}
	} else {
		r.fin = true
	}
	if r.kind == kCtl {
		w.putReq(r)
		return
	}
	if r.cb != nil {
		w.doneq.push(r)
		return
	}
	if r.autoRel {
		w.putReq(r)
	}
}

// doneInPlace finishes a receive whose data is in place with success
// without complete (lock held) and reports whether it could: a receive
// of a single-goroutine worker with no callback, auto-release or
// pending-failure notice, on no request list and not deep, needs only
// its done mark and its buffer let go. It is inlined into the eager
// receive path, which calls complete when it reports false. (A request
// that is not done has no status yet, so r.err needs no store.)
func (w *Worker) doneInPlace(r *Request) bool {
	if w.safe || r.cb != nil || r.autoRel || r.notice != nil || r.list != nil || r.deep || r.fin {
		return false
	}
	r.buf = nil
	r.fin = true
	return true
}

// completeDeep returns what a request that went past an eager send or
// receive (deep) holds: registrations, an unpacked key, a stripe, a
// rendezvous slot, its iov (lock held). A request that is not deep never
// sets these fields (putReq relies on the same), so complete skips the
// fields' cache lines for an eager request.
func (w *Worker) completeDeep(r *Request) {
	if r.reg != nil {
		w.regs.put(r.reg)
		r.reg = nil
	}
	if r.xregs != nil {
		for _, e := range r.xregs {
			w.regs.put(e)
		}
		r.xregs = nil
	}
	if r.ukey != nil {
		r.ukey.c.put(r.ukey)
		r.ukey = nil
	}
	if r.wbytes != 0 || r.stripe != nil {
		w.railUnload(r)
	}
	if r.stripe != nil {
		w.stripeDone(r)
	}
	if r.slot != 0 {
		w.slotFree(r.slot)
		r.slot = 0
	}
	r.iov[0] = nil
}

// onComp is the uct completion of r's posted operation(s).
func (r *Request) onComp(c *uct.Completion) {
	w := r.w
	w.lockCB()
	defer w.unlockCB()
	err := c.Status
	c.Status = nil
	if r.isDone() || r.xc != nil && c != r.xc {
		return // r is done, or c is of a transfer attempt r gave up (replay.go)
	}
	w.finishChunks(r, err)
}
