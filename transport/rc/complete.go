package rc

import (
	"encoding/binary"
	"fmt"

	"github.com/ucgo/ucgo/transport/rc/verbs"
	"github.com/ucgo/ucgo/uct"
)

// wcStatus maps a work completion error to a uct status.
func wcStatus(s verbs.WCStatus, ep *Endpoint) uct.Status {
	switch s {
	case verbs.WCSuccess:
		return uct.OK
	case verbs.WCWRFlushErr:
		if ep.canceling || ep.closed {
			return uct.ErrCanceled
		}
		return uct.ErrFlushed
	case verbs.WCRetryExcErr, verbs.WCRespTimeoutErr:
		return uct.ErrEndpointTimeout
	case verbs.WCRNRRetryExcErr:
		return uct.ErrRNRRetryExceeded
	case verbs.WCRemAccessErr, verbs.WCRemInvReqErr:
		return uct.ErrRemoteProtection
	case verbs.WCRemOpErr, verbs.WCRemAbortErr, verbs.WCBadRespErr:
		return uct.ErrRemoteOperation
	case verbs.WCLocProtErr, verbs.WCLocAccessErr, verbs.WCLocLenErr:
		return uct.ErrLocalProtection
	case verbs.WCFatalErr:
		return uct.ErrLocalNICFailed
	}
	return uct.ErrConnectionReset
}

// sendDone handles the completion of an operation's work request.
func (it *Iface) sendDone(wc *verbs.WC) {
	idx := int32(uint32(wc.WRID))
	if idx < 0 || int(idx) >= len(it.ops) {
		return
	}
	o := &it.ops[idx]
	if o.kind == opFree || o.gen != uint32(wc.WRID>>32) {
		return // the op was completed by Close
	}
	ep := o.ep
	ep.sqUsed--
	if wc.Status == verbs.WCSuccess {
		if o.kind == opAtomic {
			old := binary.NativeEndian.Uint64(it.res[int(idx)*8:])
			if o.emul && old != o.guess {
				if err := ep.casStep(o, idx, old); err != nil {
					it.finish(o, idx, err)
				}
				return
			}
			if o.result != nil {
				*o.result = o.extract(old)
			}
		}
		it.finish(o, idx, nil)
		return
	}
	if ep.err == nil {
		// The lifeline watcher stores its error before it moves the QP
		// to ERR: the completions that flushes are its consequence.
		if p := ep.asyncErr.Load(); p != nil {
			ep.fail(*p)
		}
	}
	st := wcStatus(wc.Status, ep)
	var cause error
	if wc.Status != verbs.WCWRFlushErr {
		cause = fmt.Errorf("work completion: %v (vendor %#x)", wc.Status, wc.VendorErr)
	} else if ep.err != nil && st == uct.ErrFlushed {
		cause = ep.err
	}
	err := ep.opErr(o.name, st, cause)
	if wc.Status != verbs.WCWRFlushErr {
		ep.fail(err)
	} else if ep.err == nil {
		ep.fail(ep.opErr("qp", uct.ErrFlushed, fmt.Errorf("QP of the endpoint entered the error state")))
	}
	it.finish(o, idx, err)
}

// finish completes o with err: releases its buffers and registrations,
// invokes its completion, and completes flushes that waited for it.
func (it *Iface) finish(o *op, idx int32, err error) {
	ep := o.ep
	comp, seq, emul := o.comp, o.seq, o.emul
	if emul {
		ep.emulDone(o, err == nil)
	}
	ep.releaseRes(o)
	*o = op{gen: o.gen}
	it.freeOps = append(it.freeOps, idx)
	if comp != nil {
		comp.Invoke(err)
	}
	it.notifier.Completed(uct.CompletionInfo{Endpoint: ep, Queue: uct.NotifySend})
	if i := seq - ep.baseSeq; seq >= ep.baseSeq && i < uint64(len(ep.done)) {
		ep.done[i] = true
	}
	k := 0
	for k < len(ep.done) && ep.done[k] {
		k++
	}
	if k > 0 {
		ep.done = ep.done[k:]
		ep.baseSeq += uint64(k)
		for len(ep.flushes) > 0 && ep.flushes[0].seq <= ep.baseSeq {
			w := ep.flushes[0]
			ep.flushes = ep.flushes[1:]
			var ferr error
			if ep.err != nil {
				ferr = ep.opErr("ep_flush", uct.StatusOf(ep.err), ep.err)
			}
			w.comp.Invoke(ferr)
		}
	}
	if len(ep.pending) > 0 {
		it.wantDispatch(ep)
	}
}
