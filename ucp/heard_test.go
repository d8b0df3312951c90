package ucp

import (
	"testing"

	"github.com/ucgo/ucgo/internal/tsc"
)

// TestLaneHeardDetect: the last sign of life a lane knows, from which a
// failover event's Detect is measured, is never later than the true one:
// traffic counted since the last round dates from that round, traffic a
// round saw from the round before, a sampled message from its own time.
func TestLaneHeardDetect(t *testing.T) {
	var r heardRounds
	var h laneHeard
	round := func(at tsc.Ticks) {
		h.mark(r.at)
		r.at = at
	}
	round(100)
	if h.last(&r) != 0 {
		t.Fatalf("silent lane: last %d, want 0 (none known)", h.last(&r))
	}
	h.got() // after the round at 100
	if got := h.last(&r); got != 100 {
		t.Fatalf("counted after the round at 100: last %d, want 100", got)
	}
	round(200)
	round(300)
	if got := h.last(&r); got != 100 {
		t.Fatalf("last %d, want the round before the one that saw it (100)", got)
	}
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

// TestLaneHeardOthers: the sum of the other lanes' counters, which a
// probe notes when it leaves, moves with traffic on any other lane and
// never with the probed lane's own.
func TestLaneHeardOthers(t *testing.T) {
	ep := &Endpoint{lanes: make([]lane, 3)}
	before := ep.rxOthers(1)
	ep.lanes[1].hd.got()
	if ep.rxOthers(1) != before {
		t.Fatal("the probed lane's own traffic moved the others' sum")
	}
	ep.lanes[2].hd.got()
	if ep.rxOthers(1) == before {
		t.Fatal("traffic on another lane left the others' sum unchanged")
	}
	ep.lanes[0].hd.rx = ^uint32(0) // wraps: still a change
	before = ep.rxOthers(1)
	ep.lanes[0].hd.got()
	if ep.rxOthers(1) == before {
		t.Fatal("a counter wrapping left the others' sum unchanged")
	}
}
