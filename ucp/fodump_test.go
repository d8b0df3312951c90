package ucp

import (
	"fmt"
	"strings"
)

// foDump describes ep's sequenced channel and failover state for a test
// that failed (lock held).
func (ep *Endpoint) foDump() string {
	f := ep.fo
	if f == nil {
		return "no sequenced channel"
	}
	var b strings.Builder
	fv := &f.fov
	fmt.Fprintf(&b, "log next %d acked %d; delivered %d held %d; syncing %v due %v/%v resend %d kind %v from %d to %d num %d txLane %d backDue %v; syncs %+v; am %d rma %d; queue %d inflight %d stalled %d fenced %d; resyncs %d, lane mismatches %d; lanes:",
		f.log.Next(), f.log.Acked(), f.win.Delivered(), f.win.Held(), fv.syncing, fv.syncDue, fv.replyDue, fv.resend, fv.kind,
		fv.from, fv.to, fv.num, fv.txLane, fv.backDue, f.syncs, ep.amLane, ep.rmaLane, ep.queue.n, ep.inflight.n, ep.stalled.n,
		len(f.fenced), ep.w.stats.Resyncs, ep.w.stats.LaneMismatch)
	for i := range ep.lanes {
		ln := &ep.lanes[i]
		fmt.Fprintf(&b, " [%d failed %v ep %v nicDown %v rnicDown %v bound %v probe out %v]", i, ln.failed != nil, ln.ep != nil, ln.nicDown, ln.rnicDown, ln.bindSent, ln.prb.out)
	}
	return b.String()
}

// stateDump describes ep's queues and lanes and, where a lane is gone or
// failed, why, for a test whose operation did not complete (lock held).
func (ep *Endpoint) stateDump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "error %v; am lane %d rma lane %d; queue %d inflight %d stalled %d; lanes:",
		ep.err, ep.amLane, ep.rmaLane, ep.queue.n, ep.inflight.n, ep.stalled.n)
	for i := range ep.lanes {
		ln := &ep.lanes[i]
		fmt.Fprintf(&b, " [%d %s failed %v ep %v]", i, ln.attr.Transport, ln.failed, ln.ep != nil)
	}
	if ep.fo != nil {
		b.WriteString("; failover: ")
		b.WriteString(ep.foDump())
	}
	return b.String()
}
