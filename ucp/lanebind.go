package ucp

import (
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

// Every message but wireup names its receiving endpoint by id, and ids
// are small sequential numbers, so the id alone would let any peer speak
// for any other. On ifaces that report each message's source (the
// connection that delivered it, uct.AMSourceIface), an endpoint is bound
// to the iface and source its peer's wireup arrived on, and a message
// naming the endpoint from anywhere else is dropped, counted
// (WorkerStats.LaneMismatch) and reported (DropEvent, DropLaneMismatch).
// A close is thus accepted only from the peer it names. A wireup for an
// endpoint already bound elsewhere is dropped the same way.

// laneSrc is where an endpoint's peer's messages arrive.
type laneSrc struct {
	wi    *wiface
	src   uct.AMSource
	bound bool
	// heard counts the signs of life from ep.rx not yet in its lanes'
	// counters (heard.go); unused in the binds
	heard uint32
	used  uint64 // a lane-bind's source: epBinds.tick when it last delivered (boundFrom)
}

// rxInfo is the source of the message being handled (wireup only).
type rxInfo struct {
	wi  *wiface
	src uct.AMSource
	ok  bool
}

// setHandlers installs the worker's AM handlers on wi's iface: bound to
// their sources where the iface reports them.
func (w *Worker) setHandlers(wi *wiface) {
	hs := []struct {
		id uint8
		h  uct.AMHandler
	}{
		{amWireup, w.onWireup}, {amEager, w.onEager}, {amRTS, w.onRTS}, {amATS, w.onATS},
		{amRTR, w.onRTR}, {amATP, w.onATP}, {amUser, w.onUser}, {amKeepalive, w.onKeepalive},
		{amClose, w.onClose}, {amUserFrag, w.onUserFrag}, {amTagFrag, w.onTagFrag}, {amUserRTS, w.onUserRTS}, {amLaneBind, w.onLaneBind},
		{amProbe, w.onProbe}, {amProbeRep, w.onProbeRep},
		{amLaneStatus, w.onLaneStatus},
	}
	hs = append(hs, w.seqHandlers()...)
	si, ok := wi.it.(uct.AMSourceIface)
	for _, e := range hs {
		if !ok {
			wi.it.SetAMHandler(e.id, e.h, wi)
			continue
		}
		switch e.id {
		case amEager:
			si.SetAMSourceHandler(e.id, w.boundEager(wi), wi)
			continue
		case amSeq:
			si.SetAMSourceHandler(e.id, w.boundSeq(wi), wi)
			continue
		}
		si.SetAMSourceHandler(e.id, w.boundHandler(wi, e.id, e.h), wi)
	}
}

// boundHandler wraps h: a wireup or lane-bind is handed its source
// (bindLane, onLaneBind), any other message goes to h only if it arrived
// where its endpoint is bound.
// Handlers run one at a time (inside the transports' progress, under the
// transport lock of a thread-safe worker), so w.rx and w.drops.pending
// need no lock of their own. It is not inlined, for the reason boundSeq
// is not.
//
//go:noinline
func (w *Worker) boundHandler(wi *wiface, id uint8, h uct.AMHandler) uct.AMSourceHandler {
	if id == amWireup || id == amLaneBind {
		return func(arg any, data []byte, flags uct.AMFlags, src uct.AMSource) {
			if id == amWireup && !wi.active.Load() {
				wi.use() // a peer connects: it talks over this iface
			}
			w.rx = rxInfo{wi: wi, src: src, ok: true}
			h(arg, data, flags)
			w.rx = rxInfo{}
			w.flushDrops()
		}
	}
	data := !ctlMsg(id)
	return func(arg any, d []byte, flags uct.AMFlags, src uct.AMSource) {
		if w.laneOK(wi, id, src, d) {
			if data && !wi.active.Load() {
				wi.use() // traffic arrived on an idle iface (lanes.go)
			}
			h(arg, d, flags)
		}
		w.flushDrops()
	}
}

// msgDst returns the receiving endpoint id a message names.
func msgDst(id uint8, data []byte) (uint32, bool) {
	off := 0
	if id == amEager || id == amRTS {
		off = 8 // after the tag
	}
	if len(data) < off+4 {
		return 0, false
	}
	return le.Uint32(data[off:]), true
}

// laneOK reports whether a message for the endpoint it names arrived on
// one of that endpoint's bound sources (its wireup's or a lane-bind's). Messages too short to name one, or naming
// none, go to their handler, which drops and counts them.
func (w *Worker) laneOK(wi *wiface, id uint8, src uct.AMSource, data []byte) bool {
	dst, ok := msgDst(id, data)
	if !ok {
		return true
	}
	w.lockCB()
	ep := w.epByID(dst)
	if ep == nil || ep.boundFrom(wi, src) {
		w.unlockCB()
		return true
	}
	w.laneMismatchFrom(ep, wi, id, src)
	w.unlockCB()
	return false
}

// laneMismatchFrom reports message id for ep that arrived from src on wi,
// neither of them ep's (lock held).
func (w *Worker) laneMismatchFrom(ep *Endpoint, wi *wiface, id uint8, src uct.AMSource) {
	w.laneMismatch(ep, fmt.Errorf("message %d for %s arrived from source %#x on %s", id, ep.name, uint64(src), wi.md.comp.Name()))
}

// bindLane binds ep to the source of the wireup being handled, in which
// the peer names its endpoint rid (lock held). A wireup from the bound
// source is accepted (the peer may have a new endpoint id: it closed or
// purged its endpoint and connected again). A wireup from any other
// source is accepted, and binds ep to it, only if ep's lane on that iface
// names the source's origin as its peer (uct.AMOriginEndpoint,
// AMOriginIface): so a reconnecting peer rebinds, while a wireup carrying
// another worker's identity or iface addresses binds nothing (an
// endpoint the worker created for it is closed). Where origins are
// unknown, only the first wireup binds.
func (w *Worker) bindLane(ep *Endpoint, rid uint32) bool {
	if !w.rx.ok {
		return true // the iface does not report sources
	}
	if ep.rx.bound && ep.rx.wi == w.rx.wi && ep.rx.src == w.rx.src {
		return true
	}
	match, known := w.originMatches(ep)
	if known && !match || !known && ep.rx.bound {
		w.laneMismatch(ep, fmt.Errorf("wireup for %s (peer endpoint %d) arrived from source %#x on %s, not from its peer",
			ep.name, rid, uint64(w.rx.src), w.rx.wi.md.comp.Name()))
		return false
	}
	ep.heardFold() // what came from the old binding is its lanes'
	ep.rx = laneSrc{wi: w.rx.wi, src: w.rx.src, bound: true}
	return true
}

// originMatches reports whether the origin of the wireup's source is the
// peer iface of ep's lane on the same iface, and whether that is known.
func (w *Worker) originMatches(ep *Endpoint) (match, known bool) {
	oi, ok := w.rx.wi.it.(uct.AMOriginIface)
	if !ok {
		return false, false
	}
	for _, ln := range ep.lanes {
		if ln.wi != w.rx.wi || ln.ep == nil {
			continue
		}
		oe, ok := ln.ep.(uct.AMOriginEndpoint)
		if !ok {
			continue
		}
		o, ok := oi.AMSourceOrigin(w.rx.src)
		return ok && o == oe.PeerOrigin(), true
	}
	return false, false
}

// laneMismatch counts a dropped message and queues its event (lock held).
func (w *Worker) laneMismatch(ep *Endpoint, cause error) {
	w.stats.LaneMismatch++
	w.drops.pending = append(w.drops.pending, DropEvent{Reason: DropLaneMismatch, Endpoint: ep,
		Err: fmt.Errorf("ucp: %w: %w", uct.ErrInvalidParam, cause)})
}

// flushDrops reports the queued drop events (in handler context, without
// the lock).
func (w *Worker) flushDrops() {
	if len(w.drops.pending) != 0 {
		w.flushDropsNow() // the test alone is inlined into the handlers
	}
}

func (w *Worker) flushDropsNow() {
	p := w.drops.pending
	w.drops.pending = nil
	for _, e := range p {
		w.dropEvent(e)
	}
}
