package ucp

import (
	"log/slog"
	"time"

	"github.com/ucgo/ucgo/failover"
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
	hd     laneHeard // signs of life (heard.go), counted per message: beside ep
	attr   uct.IfaceAttr
	failed error
	kaComp uct.Completion
	kaBusy bool
	keys   *keyCache // unpacked rendezvous keys of the peer

	// failover (failover.go): the lane's health, nil with failover off
	health *failover.Health

	laneInfo // the lane set's (laneset.go)

	prb laneProbe // per-lane probes (probe.go)

	laneRoute // how long its route has been lost (routewait.go)
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
	tagFragMax                            int // tag messages above bcopyMax up to it: eager in fragments (tag_frag.go)

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
	epBinds          // the sources of the peer's other lanes (lanebind_token.go)
	epRails          // striping (stripe.go)

	scratch [128]byte

	fo *epSeq // the sequenced channel (seq.go); nil with failover off
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
// the protocol thresholds, among the lanes the failover policy lets the
// endpoint use (policyAllows). Queued work is not bound to a lane, so moving
// it to other lanes needs nothing more; failover (failover/) calls this
// after marking a lane failed.
func (ep *Endpoint) pickLanes() bool {
	ep.amLane, ep.rmaLane = -1, -1
	for i := range ep.lanes {
		ln := &ep.lanes[i]
		if ln.failed != nil || !ep.policyAllows(i) {
			continue
		}
		if isAMLane(ln) && ep.pickStandby(i, isAMLane) && (ep.amLane < 0 || ln.attr.Latency < ep.lanes[ep.amLane].attr.Latency) {
			ep.amLane = i
		}
		if isRMALane(ln) && ep.pickStandby(i, isRMALane) && (ep.rmaLane < 0 || ln.attr.Bandwidth > ep.lanes[ep.rmaLane].attr.Bandwidth) {
			ep.rmaLane = i
		}
	}
	if ep.amLane < 0 {
		return false
	}
	ep.lanesPicked()
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
	ep.zcopyMin = ep.eagerZcopyMin(at)
	if !at.Cap.Has(uct.CapAMZcopy) || at.AMMaxZcopy < ep.bcopyMax+eagerHdr {
		ep.zcopyMin = ThreshInf
	}
	ep.rndvMin = ep.bcopyMax + 1
	if cfg.RndvThresh > 0 && cfg.RndvThresh < ep.rndvMin {
		ep.rndvMin = cfg.RndvThresh
	}
	if ep.rmaLane < 0 {
		ep.rndvMin = ThreshInf // no rendezvous: large messages fail
	}
	ep.tagFragMax = ep.tagFragMaxFor(at)
	if ep.fo != nil {
		ep.seqLimits()
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
	m := wireup{kind: wireupReq, src: ep.id, token: ep.laneToken(), addr: ep.w.addr}
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
		ep.w.laneFault(ep, ep.amLane, err)
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
	if ep.ridKnown && ep.rid != m.src && ep.fo != nil {
		w.seqReset(ep) // the peer's endpoint is a new one
	}
	ep.rid, ep.ridKnown = m.src, true
	w.peerTokenSeen(ep, m.token)
	if m.kind == wireupReq {
		ep.wireupDue = true
		ep.sendWireup()
		ep.rebindLanes()
	} else {
		ep.sendLaneBinds()
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
