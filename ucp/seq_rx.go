package ucp

import "github.com/ucgo/ucgo/uct"

// boundSeq is boundHandler and onSeq of sequenced messages in one step,
// for ifaces that name each message's source: the endpoint is looked up
// once, under one lockCB, for the lane check and the sequencing. The
// common message, an eager tag message of an endpoint next in order from
// the source of the endpoint's wireup, is numbered delivered and matched
// here without a call but the match; any other message takes
// boundSeqHeld. A message from a source its endpoint is not bound to is
// dropped and reported as boundHandler does (laneOK); a malformed one is
// dropped as onSeq drops it.
//
// It is not inlined: the copy of a closure that inlining its maker makes
// is compiled without inlining the calls it makes (lockCB, epByID, the
// byte order's loads, ...), each a call on every message (the Go
// compiler does not analyse closures created by inlining for further
// inlining, golang/go#81380).
//
//go:noinline
func (w *Worker) boundSeq(wi *wiface) uct.AMSourceHandler {
	return func(_ any, d []byte, flags uct.AMFlags, src uct.AMSource) {
		if len(d) < seqEagerHdr {
			if len(d) < 4 {
				w.flushDrops()
				return // names no endpoint: onSeq drops it
			}
			w.lockCB()
			w.boundSeqHeld(wi, w.epByID(le.Uint32(d)), d, flags, src)
			return
		}
		w.lockCB()
		ep := w.epByID(le.Uint32(d))
		if ep == nil || ep.fo == nil || d[12] != amEager || !ep.rx.bound || ep.rx.wi != wi || ep.rx.src != src ||
			!wi.active.Load() {
			w.boundSeqHeld(wi, ep, d, flags, src)
			return
		}
		f := ep.fo
		next := f.win.Delivered() + 1
		// the low 32 bits of the next number are the next number: the
		// window holds far fewer than 2^31 (failover.Unwrap32)
		if le.Uint32(d[4:]) != uint32(next) || le.Uint32(d[seqHdr+8:]) != ep.id || ep.err != nil ||
			!ep.queue.empty() || !f.win.InOrder(next) {
			w.onSeqLocked(wi, ep, d, flags)
			w.flushDrops()
			return
		}
		ep.rxGot() // heardOn, beside the binding just checked
		if a := le.Uint32(d[8:]); int32(a-f.ackIn) > 0 {
			f.ackIn = a
		}
		if f.win.Owed() >= seqAckEvery {
			w.seqAck(ep, false)
		}
		w.eagerArrive(ep, ne.Uint64(d[seqHdr:]), d[seqEagerHdr:])
		w.unlockCB()
		w.flushDrops()
	}
}

// boundSeqHeld is boundSeq for any message naming ep (nil: none), under
// the lock, which it releases.
func (w *Worker) boundSeqHeld(wi *wiface, ep *Endpoint, d []byte, flags uct.AMFlags, src uct.AMSource) {
	if ep != nil && !ep.boundFrom(wi, src) {
		w.laneMismatchFrom(ep, wi, amSeq, src)
		w.unlockCB()
		w.flushDrops()
		return
	}
	if !wi.active.Load() {
		wi.use() // traffic arrived on an idle iface (lanes.go)
	}
	if len(d) < seqHdr || d[12] != amEager && !seqInnerOK(d[12]) {
		w.unlockCB()
		w.flushDrops()
		return
	}
	w.onSeqEP(wi, ep, d, flags)
	w.flushDrops()
}
