package ucp

import (
	"testing"

	"github.com/ucgo/ucgo/internal/tsc"
)

// TestLaneHeardRounds: a lane's counter stamps the round that first sees
// it moved, so a probe sent in round s is followed by traffic exactly when
// the stamp is later than s; the last sign of life known is never later
// than the true one and no earlier than the round before it.
func TestLaneHeardRounds(t *testing.T) {
	var r heardRounds
	var h laneHeard
	round := func(at tsc.Ticks) {
		r.n++
		h.mark(r.n, r.at)
		r.at = at
	}
	round(100)
	if h.round != 0 || h.last(&r) != 0 {
		t.Fatalf("silent lane: round %d, last %d", h.round, h.last(&r))
	}
	sentR := r.n // a probe leaves in round 1
	h.got()      // traffic after it, before round 2 (at 200)
	if got := h.last(&r); got != 100 {
		t.Fatalf("counted after the round at 100: last %d, want 100", got)
	}
	round(200)
	if h.round <= sentR {
		t.Fatalf("traffic after the probe of round %d stamped round %d", sentR, h.round)
	}
	if got := h.last(&r); got != 100 {
		t.Fatalf("last %d, want the round before the one that saw it (100)", got)
	}
	sentR = r.n // a probe in round 2, and nothing after it
	round(300)
	if h.round > sentR {
		t.Fatalf("no traffic after the probe of round %d, yet stamped round %d", sentR, h.round)
	}
	// a sampled message is timed: it is the last sign of life from then
	for i := 0; i < heardSample; i++ {
		h.got()
	}
	if h.at <= 300 {
		t.Fatalf("after %d messages the lane's time is %d, want one read from the counter", heardSample, h.at)
	}
	sampled := h.at
	round(sampled + 1000)
	if h.last(&r) != sampled {
		t.Fatalf("last %d, want the sampled %d", h.last(&r), sampled)
	}
	h.gotNow()
	if h.at < sampled {
		t.Fatalf("a probe answer timed %d before the sample %d", h.at, sampled)
	}
}
