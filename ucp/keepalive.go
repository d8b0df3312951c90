package ucp

import (
	"fmt"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// Keepalive runs once per KeepaliveInterval from Progress in
// ErrorModePeer: the transports check each lane's peer (CheckLiveness),
// and the worker sends every endpoint a heartbeat carrying its interval.
// With Config.DetectSilentPeers, a peer whose heartbeats stop fails with
// an error matching uct.ErrEndpointTimeout (heartbeat).

// keepaliveMisses is how many keepalive intervals (ours, or the peer's if
// longer) may pass without a heartbeat from the peer before it is silent.
// Counting starts at its first heartbeat, so a peer that sends none is
// never silent, and skips the rounds our worker did not run.
const keepaliveMisses = 3

// heartbeat is one keepalive round for the healthy endpoint ep (lock
// held): it judges the peer and sends our heartbeat. It reports whether
// ep failed.
func (w *Worker) heartbeat(ep *Endpoint) bool {
	if !ep.ridKnown || ep.closed {
		return false
	}
	own := w.cfg.KeepaliveInterval
	if ep.kaPeer != 0 {
		if ep.kaHeard {
			ep.kaMissed = 0
		} else {
			ep.kaMissed++
		}
		ep.kaHeard = false
		peer := time.Duration(ep.kaPeer) * time.Millisecond
		allowed := keepaliveMisses * max(1, int((peer+own-1)/own))
		if w.cfg.DetectSilentPeers && ep.kaMissed >= allowed {
			w.failEP(ep, uct.NewOpError("", "keepalive", ep.name, uct.ErrEndpointTimeout,
				fmt.Errorf("no heartbeat from the peer in %d keepalive rounds", ep.kaMissed)))
			return true
		}
	}
	ms := uint32(max(1, own.Milliseconds()))
	ep.ctl(amKeepalive, func(b []byte) []byte {
		return le.AppendUint32(le.AppendUint32(b, ep.rid), ms)
	})
	return ep.err != nil
}

// onKeepalive receives a heartbeat (inside iface Progress).
func (w *Worker) onKeepalive(_ any, data []byte, _ uct.AMFlags) {
	dst, ms, err := decodeKeepalive(data)
	if err != nil || ms == 0 {
		return
	}
	w.lockCB()
	defer w.unlockCB()
	if ep := w.epByID(dst); ep != nil {
		ep.kaHeard = true
		ep.kaPeer = ms
	}
}

// probeTicks is how many times a probe round the timer has idle ifaces
// polled.
const probeTicks = 4

// keepaliveTimer is the worker's one background goroutine: every ka it
// marks a keepalive round due, every probe a probe round (failover), and
// wakes Progress; a zero period is off.
func (w *Worker) keepaliveTimer(ka, probe time.Duration) {
	defer close(w.kaDone)
	var kaC, prC <-chan time.Time
	ticks := probeTicks
	if ka > 0 {
		t := time.NewTicker(ka)
		defer t.Stop()
		kaC = t.C
	}
	if probe > 0 {
		// four ticks a round: probes and their answers crossing an idle
		// iface (an rc lane standing by) are seen at the next Progress
		// after a tick, well within the round (lanes.go)
		d := probe / probeTicks
		if d < time.Millisecond {
			d, ticks = probe, 1
		}
		t := time.NewTicker(d)
		defer t.Stop()
		prC = t.C
	}
	tick := 0
	for {
		select {
		case <-w.kaStop:
			return
		case <-kaC:
			w.kaRound.Store(true)
		case <-prC:
			w.pollIdle.Store(true)
			if tick++; tick%ticks != 0 {
				continue
			}
			w.probeDue.Store(true)
		}
		w.kaDue.Store(true)
		w.Wake()
	}
}

// keepalive judges every healthy endpoint's peer, sends it a heartbeat
// and probes its lanes (lock held).
func (w *Worker) keepalive() {
	for _, ep := range w.live {
		if ep.err != nil || w.heartbeat(ep) {
			continue
		}
		if ep.fo != nil && ep.fo.win.Owed() > 0 {
			w.seqAck(ep, false)
		}
		now := time.Now()
		for i := range ep.lanes {
			ln := &ep.lanes[i]
			if ln.kaBusy || ln.ep == nil {
				continue
			}
			ln.kaComp.Count = 1
			ln.kaBusy = true
			err := ln.ep.CheckLiveness(&ln.kaComp)
			if err == uct.ErrInProgress {
				w.routeCheck(ep, i, nil, now)
				continue
			}
			ln.kaBusy = false
			if w.routeCheck(ep, i, err, now) {
				if ep.err != nil {
					break
				}
				continue
			}
			if err != nil && uct.StatusOf(err).IsEndpointFatal() {
				w.laneFault(ep, i, err)
				if ep.err != nil {
					break
				}
			}
		}
	}
}
