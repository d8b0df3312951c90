package ucp

import "github.com/ucgo/ucgo/uct"

// The send path of every operation: post queues a request on its
// endpoint or dispatches it to its protocol at once; work that cannot be
// sent now (no transport lock, back-pressure, wireup not answered) waits
// on the endpoint, and the endpoint on the worker's backlog, until
// drainBacklog sends it in order.

// post sends r now if nothing is queued before it, else queues it (lock
// held). It keeps the endpoint's order.
func (ep *Endpoint) post(r *Request) {
	if ep.err != nil {
		ep.w.complete(r, opErr(kindOp[r.kind], ep.name, ep.err))
		return
	}
	if ep.closed {
		ep.w.complete(r, opErr(kindOp[r.kind], ep.name, uct.ErrClosed))
		return
	}
	if ep.ridKnown && ep.queue.empty() && ep.stalled.empty() && ep.w.canPost() {
		if !noResource(ep.w.dispatch(r)) {
			return
		}
	}
	ep.queue.push(r)
	if ep.ridKnown {
		ep.w.toBacklog(ep)
	}
}

// dispatch tries to send a queued or new request. It returns
// uct.ErrNoResource if r must stay (or be) queued; otherwise r has been
// removed from the queue and is in flight or completed.
func (w *Worker) dispatch(r *Request) error {
	ep := r.ep
	queued := r.list == &ep.queue
	if queued {
		ep.queue.remove(r)
	}
	var err error
	switch r.kind {
	case kTagSend:
		err = ep.sendTag(r)
	case kAMSend:
		err = ep.sendAM(r)
	case kPut, kGet:
		err = ep.doRMA(r)
	case kAtomic, kAtomicFetch:
		err = ep.doAtomic(r)
	case kCtl:
		err = ep.ctlSend(r.ctlID, r.hdr)
		if err == nil {
			w.complete(r, nil)
		}
	}
	if retryLater(err) && ep.err != nil {
		// the refusal was a lane fault that failed the endpoint
		// (laneFault): r completes with its error instead of waiting on
		// the failed endpoint's queue, which nothing sends or completes
		w.complete(r, opErr(kindOp[r.kind], ep.name, ep.err))
		return nil
	}
	if retryLater(err) {
		// queued or not, r waits at the head of the queue (post queues a
		// new request that met uct.ErrNoResource)
		if queued {
			ep.queue.pushFront(r)
		}
		return uct.ErrNoResource
	}
	if err != nil {
		w.complete(r, opErr(kindOp[r.kind], ep.name, err))
		if uct.StatusOf(err).IsEndpointFatal() {
			w.laneFault(ep, ep.opLane(r), err)
		}
	}
	return nil
}

// ctl sends an internal control message (lock held); it is queued behind
// other work if the lane is busy.
func (ep *Endpoint) ctl(id uint8, enc func([]byte) []byte) {
	if ep.err != nil || ep.closed || ep.lanes == nil {
		return
	}
	r := ep.w.getReq(kCtl, ep, nil)
	r.ctlID = id
	r.hdr = enc(r.hdr[:0])
	ep.post(r)
}

func (w *Worker) toBacklog(ep *Endpoint) {
	if !ep.inBacklog {
		ep.inBacklog = true
		w.backlog = append(w.backlog, ep)
	}
	if w.asleep {
		w.Wake() // the sleeper holds the transport lock: it sends the backlog
	}
}

// drainBacklog sends queued work of endpoints whose wireup finished or
// whose lane had no resources (lock held).
func (w *Worker) drainBacklog() int {
	n := 0
	bl := w.backlog
	w.backlog, w.backlogSpare = w.backlogSpare[:0], nil
	for _, ep := range bl {
		ep.inBacklog = false
		if ep.closed || ep.err != nil {
			continue
		}
		if ep.fo != nil {
			w.seqPending(ep)
		}
		if ep.wireupDue {
			ep.sendWireup()
		}
		if !ep.ridKnown {
			w.toBacklog(ep)
			continue
		}
		if ep.bindsDue {
			ep.sendLaneBinds()
		}
		if !ep.stalled.empty() {
			k, ok := w.resumeStalled(ep)
			n += k
			if !ok {
				continue
			}
		}
		for r := ep.queue.head; r != nil; r = ep.queue.head {
			err := w.dispatch(r)
			if noResource(err) {
				w.toBacklog(ep)
				break
			}
			n++
			if ep.err != nil || ep.closed || !ep.stalled.empty() {
				break // a transfer that just stalled goes first
			}
		}
	}
	clear(bl)
	w.backlogSpare = bl[:0]
	return n
}
