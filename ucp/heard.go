package ucp

import "github.com/ucgo/ucgo/internal/tsc"

// Signs of life of a lane. Every sequenced message, lone acknowledgement,
// sync and probe answer that arrives on a lane is a sign of life of that
// lane. Counting it must cost the message next to nothing, so a message
// only increments the lane's counter (and reads the time-stamp counter on
// one message in heardSample); the worker's probe rounds, which its timer
// marks due (probe.go), look at the counters: a lane whose counter moved
// since the last round is stamped with this round's number. A probe sent
// in round s is followed by traffic on its lane exactly when the lane's
// stamp is later than s, which is all that judging probes needs.
//
// The time is needed only for a failover event's Detect figure (how long
// the failed lane had been silent when its fault was seen): the last sign
// of life is the latest of the sampled message, the last round before the
// one that saw the counter move, and a probe answer (timed when it comes).
// It is never later than the true last sign of life, so Detect never
// understates the silence; under traffic it overstates it by at most the
// gap of heardSample messages, and by at most one probe interval on a
// lane that carries fewer.

// heardSample: one message in heardSample reads the time-stamp counter
// (a power of two).
const heardSample = 16

// laneHeard is what a lane heard (lane.hd).
type laneHeard struct {
	rx    uint32    // signs of life counted on the lane
	seen  uint32    // rx at the last round
	round uint64    // the last round that found rx moved (0: none yet)
	at    tsc.Ticks // the latest known time of a sign of life (0: none known)
}

// heardRounds numbers the worker's rounds of the lanes' counters
// (Worker.hr).
type heardRounds struct {
	n  uint64    // rounds marked
	at tsc.Ticks // time of the last round
}

// got counts one sign of life.
func (h *laneHeard) got() {
	h.rx++
	if h.rx&(heardSample-1) == 0 {
		h.at = tsc.Now()
	}
}

// gotNow counts a sign of life whose time is read now (rare messages:
// probe answers).
func (h *laneHeard) gotNow() {
	h.rx++
	h.at = tsc.Now()
}

// mark stamps the lane with round when its counter moved since the
// last one; prev is the time of the previous round, before which
// nothing counted since then can have come.
func (h *laneHeard) mark(round uint64, prev tsc.Ticks) {
	if h.rx == h.seen {
		return
	}
	h.seen, h.round = h.rx, round
	h.at = max(h.at, prev)
}

// last is the latest known time of a sign of life on the lane, with the
// worker's rounds r (0: none known).
func (h *laneHeard) last(r *heardRounds) tsc.Ticks {
	if h.rx != h.seen {
		return max(h.at, r.at) // counted after the last round
	}
	return h.at
}

// markHeard starts a round of the lanes' counters (lock held, from the
// probe rounds).
func (w *Worker) markHeard() {
	r := &w.hr
	r.n++
	for _, ep := range w.live {
		for i := range ep.lanes {
			ep.lanes[i].hd.mark(r.n, r.at)
		}
	}
	r.at = tsc.Now()
}

// heardOn counts a sign of life on the lane whose iface is arg (lock
// held).
func (ep *Endpoint) heardOn(arg any) {
	wi, _ := arg.(*wiface)
	for i := range ep.lanes {
		if ep.lanes[i].wi == wi {
			ep.lanes[i].hd.got()
		}
	}
}
