package ucp

import "github.com/ucgo/ucgo/internal/tsc"

// Signs of life of a lane. Every sequenced message, lone acknowledgement,
// sync and probe answer that arrives on a lane is a sign of life of that
// lane. Counting it must cost the message next to nothing, so a message
// only increments the lane's counter (and reads the time-stamp counter on
// one message in heardSample). A probe notes the counters when it leaves
// (probe.go): traffic came on its lane after it exactly when the lane's
// counter moved since, and on another lane exactly when the sum of the
// other lanes' counters did.
//
// The time is needed only for a failover event's Detect figure (how long
// the failed lane had been silent when its fault was seen). The worker's
// probe rounds, which its timer marks due, look at the counters: the last
// sign of life is the latest of the sampled message, the last round
// before the one that saw the counter move, and a probe answer (timed
// when it comes). It is never later than the true last sign of life, so
// Detect never understates the silence; under traffic it overstates it by
// at most the gap of heardSample messages, and by at most one probe
// interval on a lane that carries fewer.
//
// The common message, one that arrives from the source its endpoint is
// bound to (ep.rx, boundSeq), is counted in ep.rx.heard, beside the
// binding it was just checked against, rather than in its lane's
// counter: finding the lane would cost the message a loop over the
// lanes and a cache line per lane. heardFold moves those counts into the
// lanes on the bound iface, which is where heardOn counts such a
// message; everything that reads a lane's counter folds first (laneRx,
// rxOthers, markHeard, foDetect), so does every change of the binding or
// of the lanes, and so does the sampled message (heardSampled), which
// also times the lanes.

// heardSample: one message in heardSample reads the time-stamp counter
// (a power of two). The gap of 64 messages is tens of microseconds at
// ping-pong rates, and a probe round bounds it on a quiet lane; reading
// the counter costs a message a few nanoseconds each time.
const heardSample = 64

// laneHeard is what a lane heard (lane.hd).
type laneHeard struct {
	rx   uint32    // signs of life counted on the lane
	seen uint32    // rx at the last round
	at   tsc.Ticks // the latest known time of a sign of life (0: none known)
}

// heardRounds is the worker's rounds of the lanes' counters (Worker.hr).
type heardRounds struct {
	at tsc.Ticks // time of the last round
}

// got counts one sign of life.
func (h *laneHeard) got() {
	if h.rx++; h.rx&(heardSample-1) == 0 {
		h.sample()
	}
}

// sample times the sign of life just counted.
//
//go:noinline
func (h *laneHeard) sample() { h.at = tsc.Now() }

// gotNow counts a sign of life whose time is read now (rare messages:
// probe answers).
func (h *laneHeard) gotNow() {
	h.rx++
	h.at = tsc.Now()
}

// mark takes note of the lane's counter at a round: when it moved since
// the previous round, at time prev, what it counted came after prev.
func (h *laneHeard) mark(prev tsc.Ticks) {
	if h.rx == h.seen {
		return
	}
	h.seen = h.rx
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
	for _, ep := range w.live {
		ep.heardFold()
		for i := range ep.lanes {
			ep.lanes[i].hd.mark(r.at)
		}
	}
	r.at = tsc.Now()
}

// rxOthers is the sum of the signs of life counted on ep's lanes but li
// (probes compare it, heard.go).
func (ep *Endpoint) rxOthers(li int) uint32 {
	ep.heardFold()
	var n uint32
	for j := range ep.lanes {
		if j != li {
			n += ep.lanes[j].hd.rx
		}
	}
	return n
}

// heardOn counts a sign of life on the lane whose iface is arg (lock
// held). An endpoint of one lane heard it there: its messages come only
// from the lane's bound source (boundHandler).
func (ep *Endpoint) heardOn(arg any) {
	if len(ep.lanes) == 1 {
		ep.lanes[0].hd.got()
		return
	}
	ep.heardOnLanes(arg)
}

// heardOnLanes is heardOn for several lanes: every lane on the iface
// arg counts it.
func (ep *Endpoint) heardOnLanes(arg any) {
	wi, _ := arg.(*wiface)
	for i := range ep.lanes {
		if ep.lanes[i].wi == wi {
			ep.lanes[i].hd.got()
		}
	}
}

// laneRx is the signs of life counted on lane li of ep (lock held).
func (ep *Endpoint) laneRx(li int) uint32 {
	ep.heardFold()
	return ep.lanes[li].hd.rx
}

// rxGot counts a sign of life from ep.rx (lock held, from boundSeq).
func (ep *Endpoint) rxGot() {
	if ep.rx.heard++; ep.rx.heard&(heardSample-1) == 0 {
		ep.heardSampled()
	}
}

// heardSampled folds ep.rx's counts, the sampled message's with them,
// into their lanes and times them now (lock held).
//
//go:noinline
func (ep *Endpoint) heardSampled() {
	ep.heardFold()
	now := tsc.Now()
	for i := range ep.lanes {
		if ln := &ep.lanes[i]; ep.rxLane(ln) {
			ln.hd.at = now
		}
	}
}

// heardFold moves the signs of life counted in ep.rx.heard into the
// counters of their lanes (rxLane) (lock held).
func (ep *Endpoint) heardFold() {
	n := ep.rx.heard
	if n == 0 {
		return
	}
	for i := range ep.lanes {
		if ln := &ep.lanes[i]; ep.rxLane(ln) {
			ln.hd.rx += n
		}
	}
	ep.rx.heard = 0
}

// rxLane says whether heardOn counts a message from ep.rx on ln: the lane
// of an endpoint of one lane, else every lane on ep.rx's iface.
func (ep *Endpoint) rxLane(ln *lane) bool {
	return len(ep.lanes) == 1 || ln.wi == ep.rx.wi
}
