package ucp

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

// Binding every lane. An endpoint with several lanes (laneset.go) is bound
// on each: its peer's messages may arrive on any of the peer's lanes
// (after a failover, on another one than the wireup's). The first lane is
// bound by the wireup (lanebind.go), which also carries the sender's
// lane-bind token, a random 64-bit secret of its endpoint. Once the peer's
// endpoint id is known, the endpoint sends a lane-bind (amLaneBind: the
// peer's endpoint id and our token) over each of its lanes; the receiver
// binds the lane's source to the endpoint only if the token is the one
// its peer's wireup carried. A lane-bind with another token is dropped,
// counted and reported as a lane mismatch (WorkerStats.LaneMismatch,
// DropLaneMismatch); one that overtook the peer's wireup (lanes are not
// ordered with each other) waits for it. laneOK accepts a message from
// any bound source of its endpoint.

// epBinds is an endpoint's binding beyond its first source.
type epBinds struct {
	token     uint64     // ours, sent in our wireups and lane-binds
	peerToken uint64     // the peer's, from its wireup (0: none yet)
	binds     []laneSrc  // further sources of the peer's lanes, proven with peerToken
	tick      uint64     // counts the binds: a source's use is stamped with it
	pend      []pendBind // lane-binds that arrived before the peer's wireup
	bindsDue  bool       // lane-binds wait for the transports (drainBacklog)
}

type pendBind struct {
	src   laneSrc
	token uint64
}

// maxBinds bounds an endpoint's bound and pending sources.
const maxBinds = 2 * maxIfaces

// laneToken returns ep's lane-bind token, drawing it on first use.
func (ep *Endpoint) laneToken() uint64 {
	for ep.token == 0 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(fmt.Sprintf("ucp: crypto/rand: %v", err))
		}
		ep.token = binary.LittleEndian.Uint64(b[:])
	}
	return ep.token
}

// laneBind is the lane-bind message.
type laneBind struct {
	dst   uint32
	token uint64
}

const laneBindLen = 4 + 8

func (m *laneBind) encode(b []byte) []byte {
	b = le.AppendUint32(b[:0], m.dst)
	return le.AppendUint64(b, m.token)
}

func decodeLaneBind(b []byte) (laneBind, error) {
	if len(b) != laneBindLen {
		return laneBind{}, errWire("lane-bind")
	}
	return laneBind{dst: le.Uint32(b), token: le.Uint64(b[4:])}, nil
}

// sendLaneBinds sends a lane-bind over each lane of ep that has not
// carried one (lock held). An endpoint with one lane has nothing to bind
// beyond its wireup. Lanes that lack resources, or a transport lock held
// elsewhere, leave the rest to drainBacklog.
func (ep *Endpoint) sendLaneBinds() {
	ep.bindsDue = false
	if len(ep.lanes) < 2 || !ep.ridKnown || ep.err != nil || ep.closed {
		return
	}
	for i := range ep.lanes {
		if ln := &ep.lanes[i]; ln.bindSent || ln.failed != nil || ln.ep == nil {
			continue
		}
		if !ep.sendBind(i) {
			return
		}
	}
}

// sendBind sends a lane-bind over lane i (lock held). It reports false
// when the lane or the transport lock lacks room: drainBacklog sends it
// later.
func (ep *Endpoint) sendBind(i int) bool {
	w, ln := ep.w, &ep.lanes[i]
	if !ep.ridKnown || ln.ep == nil {
		return true
	}
	if !w.canPost() {
		ep.bindsDue = true
		w.toBacklog(ep)
		return false
	}
	m := laneBind{dst: ep.rid, token: ep.laneToken()}
	_, err := ln.ep.AMBcopy(amLaneBind, m.encode(ep.scratch[:0]), nil)
	if retryLater(err) || err == uct.ErrBusy {
		ep.bindsDue = true
		w.toBacklog(ep)
		return false
	}
	// sent, or the lane failed: its own operations meet the failure
	ln.bindSent = true
	return true
}

// rebindLanes sends the lane-binds again (lock held): the peer's wireup
// request says it has a new endpoint for us, which knows none of our
// lanes.
func (ep *Endpoint) rebindLanes() {
	for i := range ep.lanes {
		ep.lanes[i].bindSent = false
	}
	ep.sendLaneBinds()
}

// peerToken records the token of the peer's wireup (lock held): a new
// token (the peer's endpoint is new) forgets the sources bound with the
// old one; lane-binds that waited for it are checked now.
func (w *Worker) peerTokenSeen(ep *Endpoint, token uint64) {
	if token != ep.peerToken {
		ep.peerToken = token
		ep.binds = nil
	}
	pend := ep.pend
	ep.pend = nil
	for _, p := range pend {
		w.checkBind(ep, p.src, p.token)
	}
}

// onLaneBind handles a lane-bind (inside iface Progress; w.rx is its
// source).
func (w *Worker) onLaneBind(_ any, data []byte, _ uct.AMFlags) {
	m, err := decodeLaneBind(data)
	if err != nil || !w.rx.ok {
		return
	}
	src := laneSrc{wi: w.rx.wi, src: w.rx.src, bound: true}
	w.lockCB()
	defer w.unlockCB()
	ep := w.epByID(m.dst)
	if ep == nil || ep.err != nil {
		return
	}
	if ep.peerToken == 0 {
		if len(ep.pend) < maxBinds {
			ep.pend = append(ep.pend, pendBind{src: src, token: m.token})
			return
		}
		w.laneMismatch(ep, fmt.Errorf("lane-bind for %s from source %#x on %s: too many before the wireup",
			ep.name, uint64(src.src), src.wi.md.comp.Name()))
		return
	}
	w.checkBind(ep, src, m.token)
}

// checkBind binds src to ep if token is the peer's (lock held); otherwise
// the lane-bind is a lane mismatch.
func (w *Worker) checkBind(ep *Endpoint, src laneSrc, token uint64) {
	if token != ep.peerToken {
		w.laneMismatch(ep, fmt.Errorf("lane-bind for %s from source %#x on %s with a wrong token",
			ep.name, uint64(src.src), src.wi.md.comp.Name()))
		return
	}
	if ep.boundFrom(src.wi, src.src) {
		return
	}
	if len(ep.binds) >= maxBinds {
		// Every connection of a lane rebuilt or dialled again binds a
		// new source, so a flapping link fills the list with sources of
		// connections long gone. The one unused the longest goes: never
		// a lane bound at the start and carrying messages since (its
		// probes, if nothing else), as the oldest would be.
		old := 0
		for i := range ep.binds {
			if ep.binds[i].used < ep.binds[old].used {
				old = i
			}
		}
		ep.binds = append(ep.binds[:old], ep.binds[old+1:]...)
	}
	ep.tick++
	src.used = ep.tick
	ep.binds = append(ep.binds, src)
}

// boundFrom reports whether the peer's messages may arrive from src on wi.
func (ep *Endpoint) boundFrom(wi *wiface, src uct.AMSource) bool {
	if ep.rx.bound && ep.rx.wi == wi && ep.rx.src == src {
		return true
	}
	for i := range ep.binds {
		if b := &ep.binds[i]; b.wi == wi && b.src == src {
			b.used = ep.tick
			return true
		}
	}
	return false
}
