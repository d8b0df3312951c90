package ucp

import "github.com/ucgo/ucgo/uct"

// Flush: a flush request completes when the operations started before it
// (on its endpoint, or on every endpoint of the worker) have completed.

// Flush returns a request that completes when every operation started on
// every endpoint of the worker so far has completed.
func (w *Worker) Flush(p *Params) *Request {
	w.lock()
	defer w.unlock()
	r := w.getReq(kFlush, nil, p)
	w.flushers = append(w.flushers, r)
	return r
}

// Flush returns a request that completes when every operation started on
// the endpoint so far has completed (or with the endpoint's error; on a
// closed endpoint with an error matching uct.ErrClosed).
func (ep *Endpoint) Flush(p *Params) *Request {
	w := ep.w
	w.lock()
	defer w.unlock()
	r := w.getReq(kFlush, ep, p)
	if ep.err != nil {
		w.complete(r, ep.fail("flush"))
		return r
	}
	if ep.closed {
		w.complete(r, opErr("flush", ep.name, uct.ErrClosed))
		return r
	}
	r.value = ep.seqMark()
	w.flushers = append(w.flushers, r)
	return r
}

func (ep *Endpoint) idle() bool {
	return ep.closed || ep.err != nil || ep.queue.empty() && ep.inflight.empty() && ep.stalled.empty() && !ep.wireupDue
}

// checkFlushers completes flush and close requests whose endpoints are
// idle (lock held).
func (w *Worker) checkFlushers() {
	fl := w.flushers
	w.flushers = nil
	for _, r := range fl {
		if r.isDone() {
			continue
		}
		ep := r.ep
		if ep == nil {
			ok := true
			for _, e := range w.live {
				if !e.idle() || !w.seqAcked(e, ^uint64(0)) {
					ok = false
					break
				}
			}
			if ok {
				w.complete(r, nil)
			} else {
				w.flushers = append(w.flushers, r)
			}
			continue
		}
		if !ep.idle() || !w.seqAcked(ep, r.value) {
			w.flushers = append(w.flushers, r)
			continue
		}
		if r.flushN == 0 && ep.err == nil && !ep.closed {
			// transport-level flush of every lane that carries: a failed
			// lane connected again for its probes carries none of the
			// endpoint's operations (they were replayed elsewhere)
			r.comp.Count = 1
			for i := range ep.lanes {
				if ln := &ep.lanes[i]; ln.ep != nil && ln.failed == nil {
					r.comp.Count++
					if err := ln.ep.Flush(false, &r.comp); err != uct.ErrInProgress {
						r.comp.Count--
					}
				}
			}
			r.comp.Count--
			if r.comp.Count > 0 {
				r.flushN = 1
				continue // onComp -> stepDone finishes
			}
		}
		w.finishFlush(r)
	}
}

func (w *Worker) finishFlush(r *Request) {
	ep := r.ep
	if r.closing {
		w.closeEP(ep, false, uct.ErrCanceled)
		w.complete(r, nil)
		return
	}
	if ep.err != nil {
		w.complete(r, ep.fail("flush"))
		return
	}
	w.complete(r, nil)
}
