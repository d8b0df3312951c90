package ucp

import (
	"log/slog"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// EPParams configure an endpoint.
type EPParams struct {
	// ErrorHandler is called once (Peer error mode) when the endpoint
	// fails, from Progress, with the endpoint's error. It may close the
	// endpoint.
	ErrorHandler func(ep *Endpoint, err error)
	// SourceTag is the peer's rank bits in tags (Config.SourceTagMask).
	// An endpoint that the peer's connection created has no known
	// source tag until Connect with the peer's address gives it one.
	SourceTag uint64
	// Timeout bounds the connection of each lane and the liveness of its
	// operations (uct.EPParams.Timeout); 0 uses the transport's default.
	Timeout time.Duration
}

// CloseMode says how Endpoint.Close treats outstanding work.
type CloseMode int

const (
	// CloseFlush completes outstanding operations, tells the peer, then
	// closes.
	CloseFlush CloseMode = iota
	// CloseForce closes at once: outstanding requests complete with
	// uct.ErrCanceled.
	CloseForce
)

// lane is one transport connection of an endpoint.
type lane struct {
	ep     uct.Endpoint
	wi     *wiface
	attr   uct.IfaceAttr
	failed error
	kaComp uct.Completion
	kaBusy bool
	keys   *keyCache // unpacked rendezvous keys of the peer
}

// Endpoint is a connection to one peer worker over a set of lanes. Its
// methods start non-blocking operations; each returns a *Request.
type Endpoint struct {
	w        *Worker
	id       uint32 // our id, sent by the peer in every message
	rid      uint32 // the peer's id for us
	ridKnown bool
	uuid     uint64
	name     string
	params   EPParams
	lanes    []lane
	amLane   int
	rmaLane  int
	// shortMax, bcopyMax: largest eager payloads per protocol on the AM
	// lane; zcopyMin, rndvMin: thresholds.
	shortMax, bcopyMax, zcopyMin, rndvMin int

	err          error
	errReported  bool
	remoteClosed bool
	closed       bool
	wireupDue    bool
	inBacklog    bool

	queue    reqList // not yet sent: wireup not done or back-pressure
	inflight reqList // sent, waiting for a completion, ATS, RTR or ATP
	// stalled: transfers some of whose chunks the lane refused for lack
	// of resources (rndv.go); they resume before the queue.
	stalled reqList

	// silence detection (keepalive.go)
	kaHeard  bool   // a heartbeat arrived since the last round
	kaMissed int    // rounds without one
	kaPeer   uint32 // the peer's keepalive interval in ms; 0: not armed

	asmBytes int     // reassembly memory held for this peer (reassembly.go)
	rx       laneSrc // where the peer's messages arrive (lanebind.go)

	scratch [128]byte
}

// Name returns a printable name of the peer.
func (ep *Endpoint) Name() string { return ep.name }

// Err returns the endpoint's error (nil while healthy).
func (ep *Endpoint) Err() error {
	ep.w.lock()
	defer ep.w.unlock()
	return ep.err
}

// Worker returns the endpoint's worker.
func (ep *Endpoint) Worker() *Worker { return ep.w }

// pickLanes selects the AM lane (lowest latency) and the RMA lane
// (highest bandwidth with get/put zcopy) among healthy lanes, and derives
// the protocol thresholds. Queued work is not bound to a lane, so moving
// it to other lanes needs nothing more; failover (failover/) calls this
// after marking a lane failed.
func (ep *Endpoint) pickLanes() bool {
	ep.amLane, ep.rmaLane = -1, -1
	for i := range ep.lanes {
		ln := &ep.lanes[i]
		if ln.failed != nil {
			continue
		}
		if ln.attr.Cap.Has(uct.CapAMBcopy) && (ep.amLane < 0 || ln.attr.Latency < ep.lanes[ep.amLane].attr.Latency) {
			ep.amLane = i
		}
		if ln.attr.Cap.Has(uct.CapGetZcopy|uct.CapPutZcopy) && (ep.rmaLane < 0 || ln.attr.Bandwidth > ep.lanes[ep.rmaLane].attr.Bandwidth) {
			ep.rmaLane = i
		}
	}
	if ep.amLane < 0 {
		return false
	}
	cfg := &ep.w.cfg
	at := &ep.lanes[ep.amLane].attr
	ep.shortMax = -1
	if at.Cap.Has(uct.CapAMShort) {
		ep.shortMax = min(at.AMMaxShort, len(ep.scratch)) - 4 // sendTag builds it in scratch
		if cfg.ShortThresh != 0 && cfg.ShortThresh < ep.shortMax {
			ep.shortMax = cfg.ShortThresh
		}
	}
	ep.bcopyMax = at.AMMaxBcopy - eagerHdr
	ep.zcopyMin = cfg.ZcopyThresh
	if !at.Cap.Has(uct.CapAMZcopy) || at.AMMaxZcopy < ep.bcopyMax+eagerHdr {
		ep.zcopyMin = 1 << 62
	}
	ep.rndvMin = ep.bcopyMax + 1
	if cfg.RndvThresh > 0 && cfg.RndvThresh < ep.rndvMin {
		ep.rndvMin = cfg.RndvThresh
	}
	if ep.rmaLane < 0 {
		ep.rndvMin = 1 << 62 // no rendezvous: large messages fail
	}
	return true
}

func (ep *Endpoint) sendWireup() {
	if !ep.wireupDue || ep.err != nil {
		return
	}
	if !ep.w.canPost() {
		ep.w.toBacklog(ep)
		return
	}
	m := wireup{kind: wireupReq, src: ep.id, addr: ep.w.addr}
	if ep.ridKnown {
		m.kind, m.dst = wireupRep, ep.rid
	}
	_, err := ep.lanes[ep.amLane].ep.AMBcopy(amWireup, m.encode(), nil)
	switch {
	case err == nil:
		ep.wireupDue = false
	case retryLater(err):
		ep.w.toBacklog(ep)
	default:
		ep.w.failEP(ep, err)
	}
}

// onWireup handles a connection request or reply (inside iface Progress).
func (w *Worker) onWireup(arg any, data []byte, _ uct.AMFlags) {
	m, err := decodeWireup(data)
	if err != nil {
		return
	}
	a, err := UnpackAddress(m.addr)
	if err != nil {
		return
	}
	w.lockCB()
	defer w.unlockCB()
	if w.closed {
		return
	}
	ep := w.byUUID[a.UUID]
	created := false
	if ep == nil {
		if m.kind != wireupReq {
			return
		}
		if ep, err = w.newEP(a, EPParams{}, false); err != nil {
			slog.Warn("ucp: cannot connect back to peer", "err", err)
			return
		}
		created = true
	}
	if ep.err != nil || !w.bindLane(ep, m.src) {
		if created {
			w.closeEP(ep, true, uct.ErrCanceled)
		}
		return
	}
	ep.rid, ep.ridKnown = m.src, true
	if m.kind == wireupReq {
		ep.wireupDue = true
		ep.sendWireup()
	}
	if !ep.queue.empty() {
		w.toBacklog(ep)
	}
}

func (w *Worker) epByID(id uint32) *Endpoint {
	if int(id) < len(w.eps) {
		if ep := w.eps[id]; ep != nil && !ep.closed {
			return ep
		}
	}
	return nil
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
	w.backlog = nil
	for _, ep := range bl {
		ep.inBacklog = false
		if ep.closed || ep.err != nil {
			continue
		}
		if ep.wireupDue {
			ep.sendWireup()
		}
		if !ep.ridKnown {
			w.toBacklog(ep)
			continue
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
			if err == uct.ErrNoResource {
				w.toBacklog(ep)
				break
			}
			n++
			if ep.err != nil || ep.closed || !ep.stalled.empty() {
				break // a transfer that just stalled goes first
			}
		}
	}
	return n
}

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
		if ep.w.dispatch(r) != uct.ErrNoResource {
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
		_, err = ep.lanes[ep.amLane].ep.AMBcopy(r.ctlID, r.hdr, nil)
		if err == nil {
			w.complete(r, nil)
		}
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
			w.failEP(ep, err)
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
				if !e.idle() {
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
		if !ep.idle() {
			w.flushers = append(w.flushers, r)
			continue
		}
		if r.flushN == 0 && ep.err == nil && !ep.closed {
			// transport-level flush of every lane
			r.comp.Count = 1
			for i := range ep.lanes {
				if ln := &ep.lanes[i]; ln.ep != nil {
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
