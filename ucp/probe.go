package ucp

import (
	"fmt"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/uct"
)

// Per-lane probes. With failover on, every Policy.ProbeInterval the worker
// sends each lane of each endpoint that has more than one lane an amProbe
// over that very lane; the peer answers with an amProbeRep over its own
// lane on the iface the probe arrived on, so the answer proves the lane in
// both directions. Answers and misses drive the lane's failover.Health:
//
//   - a probe still unanswered at the next round is a miss, but only while
//     another lane of the endpoint answered meanwhile (a peer silent on
//     every lane is keepalive's and the transports' to judge, never a
//     route fault);
//   - Policy.ProbeMisses misses in a row fail the lane with
//     uct.ErrRouteLost (laneFault), so a black-holed lane is found within
//     Policy.DetectBound (one second by default);
//   - a failed lane is probed on: Policy.UpProbes answers in a row bring
//     it back up (laneUp).
//
// No goroutine runs for this: the worker's timer goroutine (keepalive.go)
// sets probeDue every ProbeInterval and wakes Progress, which sends the
// probes. Without failover nothing here runs and no probe is sent.

const (
	amProbe    = 24 // dst u32, lane u8 (the prober's lane index), seq u32
	amProbeRep = 25 // dst u32, lane u8 (echoed), seq u32 (echoed)
)

const probeLen = 9

// probeMsg is a probe or its answer.
type probeMsg struct {
	dst  uint32 // the receiver's endpoint id
	lane uint8  // the prober's lane index
	seq  uint32 // the prober's probe number on that lane
}

func (m probeMsg) encode(b []byte) []byte {
	b = le.AppendUint32(b[:0], m.dst)
	b = append(b, m.lane)
	return le.AppendUint32(b, m.seq)
}

func decodeProbe(b []byte) (probeMsg, error) {
	if len(b) != probeLen {
		return probeMsg{}, errWire("probe")
	}
	return probeMsg{dst: le.Uint32(b), lane: b[4], seq: le.Uint32(b[5:])}, nil
}

// laneProbe is one lane's probe state (lane.prb).
type laneProbe struct {
	seq  uint32    // number of the last probe sent
	out  bool      // that probe is unanswered
	sent time.Time // when it was sent
	// the lane's signs of life and the sum of the other lanes' when it
	// was sent (heard.go)
	sentRx, othersRx uint32
	heard            time.Time // when the lane last answered a probe
	// dialed is when the lane was last connected again for its probes
	// (reconnectProbe); dial is that connection, or rebuildLane's, while
	// it waits for the peer (lanedial.go).
	dialed     time.Time
	dial       uct.Connecting
	rebuilding bool // dial is rebuildLane's
}

// ProbeStats counts the worker's per-lane probes (WorkerStats.Probes).
type ProbeStats struct {
	Sent, Answered, Missed uint64
	// RouteLost: lanes failed for missing their probes; Recovered: failed
	// lanes brought back up by answered probes.
	RouteLost, Recovered uint64
	// Redialed: failed lanes connected again to be probed.
	Redialed uint64
	// LastDetect is, for the last lane failed by its probes, the time from
	// its last answered probe to the failure.
	LastDetect time.Duration
}

// probing reports whether the worker probes its lanes.
func (w *Worker) probing() bool {
	return w.cfg.Failover.Mode != failover.Off && w.cfg.Failover.ProbeInterval > 0
}

// laneHealth returns the lane's health, starting it up now if it has
// none yet.
func (w *Worker) laneHealth(ln *lane, now time.Time) *failover.Health {
	if ln.health == nil {
		ln.health = failover.NewHealth(w.cfg.Failover, now)
	}
	return ln.health
}

// timerWork runs what the worker's timer found due (lock held).
func (w *Worker) timerWork() {
	if w.kaRound.Swap(false) {
		w.keepalive()
	}
	if w.probeDue.Swap(false) {
		w.probeRound(time.Now())
	}
}

// probeRound judges last round's probes and sends the next ones (lock
// held).
func (w *Worker) probeRound(now time.Time) {
	if !w.canPost() {
		w.probeDue.Store(true) // the transport lock's holder runs it later
		return
	}
	w.markHeard()
	for _, ep := range append([]*Endpoint(nil), w.live...) {
		if ep.err != nil || ep.closed || !ep.ridKnown || len(ep.lanes) < 2 {
			continue
		}
		w.judgeProbes(ep, now)
		if ep.err != nil || ep.closed {
			continue
		}
		w.resync(ep)
		for li := range ep.lanes {
			w.sendProbe(ep, li, now)
		}
	}
}

// judgeProbes counts a miss for every lane whose probe of the last round
// is unanswered while another lane answered since, and fails a lane whose
// misses reach the policy's count.
func (w *Worker) judgeProbes(ep *Endpoint, now time.Time) {
	for li := range ep.lanes {
		ln := &ep.lanes[li]
		if ln.ep == nil {
			ln.prb.out = false // closed: its probe will never be answered
			continue
		}
		if !ln.prb.out {
			continue
		}
		h := w.laneHealth(ln, now)
		if h.State().Carries() && ep.laneRx(li) != ln.prb.sentRx {
			// Traffic arrived on the lane since the probe left: the
			// lane is alive (a busy peer may answer late, or not at
			// all when its own queue is full).
			ln.prb.out = false
			h.Heard(now)
			continue
		}
		if !w.otherLaneHeard(ep, li) {
			continue
		}
		if _, ok := w.cfg.Failover.Select(ep.foLanes(), li); !ok {
			// no lane the traffic could move to (the one that answered
			// is failed or coming back, as in a flap): a miss here would
			// only end the endpoint, so it is not counted; the lane's
			// own retries still fail it if its path is gone
			ln.prb.out = false
			continue
		}
		ln.prb.out = false
		w.stats.Probes.Missed++
		last := ln.prb.heard
		tr := h.Missed(now, uct.ErrRouteLost)
		if tr.To != failover.Failed || !tr.Changed() || tr.From == failover.Probing {
			continue
		}
		if ln.failed != nil {
			continue // already failed by another cause
		}
		w.stats.Probes.RouteLost++
		if !last.IsZero() {
			w.stats.Probes.LastDetect = now.Sub(last)
		}
		cause := uct.NewOpError(ln.wi.md.comp.Name(), "probe", ep.name, uct.ErrRouteLost,
			fmt.Errorf("lane %d missed %d probes in a row (every %v) while another lane answered",
				li, w.cfg.Failover.ProbeMisses, w.cfg.Failover.ProbeInterval))
		w.laneFault(ep, li, cause)
		if ep.err != nil || ep.closed {
			return
		}
	}
}

// otherLaneHeard reports whether a lane of ep other than li answered a
// probe or carried traffic from the peer after li's probe left.
func (w *Worker) otherLaneHeard(ep *Endpoint, li int) bool {
	p := &ep.lanes[li].prb
	if ep.rxOthers(li) != p.othersRx {
		return true // a probe answer counts too
	}
	for j := range ep.lanes {
		if j != li && ep.lanes[j].prb.heard.After(p.sent) {
			return true
		}
	}
	return false
}

// sendProbe sends lane li its next probe, unless its last one is still
// unanswered (it is judged next round). A failed lane is moved to
// probing first.
func (w *Worker) sendProbe(ep *Endpoint, li int, now time.Time) {
	ln := &ep.lanes[li]
	if ln.prb.out || li > 0xff || ln.ep == nil && !w.reconnectProbe(ep, li, now) {
		return
	}
	h := w.laneHealth(ln, now)
	if h.State() == failover.Failed {
		h.Probe(now)
	}
	m := probeMsg{dst: ep.rid, lane: uint8(li), seq: ln.prb.seq + 1}
	var b [probeLen]byte
	// A probe the lane refuses for its port down or its connection broken
	// is judged as one unanswered: a lane that cannot carry a probe for
	// ProbeMisses rounds carries nothing else either. One refused for
	// lack of room (a busy lane) is tried again next round.
	_, err := ln.ep.AMBcopy(amProbe, m.encode(b[:0]), nil)
	switch {
	case err == nil:
		w.stats.Probes.Sent++
	case err == uct.ErrNoResource:
		return
	}
	ln.prb.seq++
	ln.prb.out, ln.prb.sent = true, now
	ln.prb.sentRx, ln.prb.othersRx = ep.laneRx(li), ep.rxOthers(li)
}

// reconnectProbe connects lane li of ep again so that its probes can
// tell when its path is back (lock held). It acts on a lane that failed
// for any cause but its own or its peer's device (the device watchers
// rebuild those, linkwatch.go, unless our device is usable again before
// a watcher said so) and whose uct endpoint the failover
// closed; at most once every ProbeMisses probe intervals, so that a path
// still broken is not dialled in a loop. The new endpoint is bound by a
// lane-bind and carries nothing but probes until laneUp: the lane stays
// failed.
func (w *Worker) reconnectProbe(ep *Endpoint, li int, now time.Time) bool {
	ln := &ep.lanes[li]
	pol := &w.cfg.Failover
	if ln.prb.rebuilding {
		return false // the device watcher's rebuild is connecting the lane
	}
	if ln.nicDown && !ln.wi.deviceDown() {
		// our device is usable again but its watcher has not rebuilt
		// the lane (no watcher, or its report still queued): the
		// probes take the lane over
		ln.nicDown = false
	}
	if ln.ep != nil || ln.failed == nil || ln.nicDown || ln.rnicDown || ln.raddr == nil ||
		ln.prb.dial == nil && now.Sub(ln.prb.dialed) < pol.ProbeInterval*time.Duration(pol.ProbeMisses) {
		return false
	}
	if ln.prb.dial == nil {
		ln.prb.dialed = now
	}
	uep, err := w.laneConnect(ep, li)
	if err != nil {
		return false // not yet answered (each probe round asks again), or failed
	}
	ln.ep, ln.bindSent = uep, false
	m := laneBind{dst: ep.rid, token: ep.laneToken()}
	if _, err := uep.AMBcopy(amLaneBind, m.encode(ep.scratch[:0]), nil); err == nil {
		ln.bindSent = true
	}
	w.stats.Probes.Redialed++
	return true
}

// onProbe answers a probe over our lane on the iface it arrived on
// (inside iface Progress).
func (w *Worker) onProbe(arg any, data []byte, _ uct.AMFlags) {
	m, err := decodeProbe(data)
	if err != nil {
		return
	}
	wi, _ := arg.(*wiface)
	w.lockCB()
	defer w.unlockCB()
	ep := w.epByID(m.dst)
	if ep == nil || ep.err != nil || !ep.ridKnown || !w.canPost() {
		return
	}
	for i := range ep.lanes {
		ln := &ep.lanes[i]
		if ln.wi != wi || ln.ep == nil {
			continue
		}
		rep := probeMsg{dst: ep.rid, lane: m.lane, seq: m.seq}
		var b [probeLen]byte
		ln.ep.AMBcopy(amProbeRep, rep.encode(b[:0]), nil)
		return
	}
}

// onProbeRep takes a probe's answer: it counts only if it answers the
// lane's last probe and arrived on that lane's iface (inside iface
// Progress).
func (w *Worker) onProbeRep(arg any, data []byte, _ uct.AMFlags) {
	m, err := decodeProbe(data)
	if err != nil {
		return
	}
	wi, _ := arg.(*wiface)
	w.lockCB()
	defer w.unlockCB()
	ep := w.epByID(m.dst)
	if ep == nil || ep.err != nil || int(m.lane) >= len(ep.lanes) {
		return
	}
	li := int(m.lane)
	ln := &ep.lanes[li]
	if ln.wi != wi || !ln.prb.out || m.seq != ln.prb.seq {
		return
	}
	now := time.Now()
	ln.prb.out, ln.prb.heard = false, now
	ln.hd.gotNow()
	w.stats.Probes.Answered++
	tr := w.laneHealth(ln, now).Heard(now)
	if tr.Changed() && tr.From == failover.Probing && tr.To == failover.Up {
		w.stats.Probes.Recovered++
		w.laneUp(ep, li)
	}
}
