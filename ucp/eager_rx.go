package ucp

import "github.com/ucgo/ucgo/uct"

// boundEager is boundHandler and onEager of eager tag messages in one
// step, for ifaces that name each message's source: the header is
// decoded once, the endpoint looked up once under one lockCB, and a
// message from a source the endpoint is not bound to is dropped and
// reported as boundHandler does (laneOK). It is not inlined, for the
// reason boundSeq is not.
//
//go:noinline
func (w *Worker) boundEager(wi *wiface) uct.AMSourceHandler {
	return func(_ any, d []byte, _ uct.AMFlags, src uct.AMSource) {
		tag, dst, payload, ok := splitEager(d)
		if !ok {
			w.flushDrops()
			return
		}
		w.lockCB()
		ep := w.epByID(dst)
		if ep != nil && !ep.boundFrom(wi, src) {
			w.laneMismatchFrom(ep, wi, amEager, src)
			w.unlockCB()
			w.flushDrops()
			return
		}
		if !wi.active.Load() {
			wi.use() // traffic arrived on an idle iface (lanes.go)
		}
		w.eagerArrive(ep, tag, payload)
		w.unlockCB()
		w.flushDrops()
	}
}
