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

// TestLaneHeardFold: a message counted beside the endpoint's binding
// (rxGot, the receive path's) reaches the counters of the lanes on the
// bound iface, and only theirs, before anything reads them: probes see
// it on their lane and among the others', a round sees it, the sampled
// message times the lanes, and a new binding leaves what the old one
// counted with the old one's lanes.
func TestLaneHeardFold(t *testing.T) {
	wa, wb := &wiface{}, &wiface{}
	ep := &Endpoint{lanes: []lane{{wi: wa}, {wi: wb}, {wi: wa}}}
	ep.rx = laneSrc{wi: wa, src: 1, bound: true}
	for i := 0; i < 3; i++ {
		ep.rxGot()
	}
	if got := [3]uint32{ep.laneRx(0), ep.laneRx(1), ep.laneRx(2)}; got != [3]uint32{3, 0, 3} {
		t.Fatalf("lane counters %v after 3 messages from the bound source on lanes 0 and 2's iface, want [3 0 3]", got)
	}
	before := ep.rxOthers(1)
	ep.rxGot()
	if ep.rxOthers(1) == before {
		t.Fatal("a message on another lane's iface left the others' sum unchanged")
	}
	before = ep.laneRx(1)
	ep.rxGot()
	if ep.laneRx(1) != before {
		t.Fatal("a message on another iface moved lane 1's counter")
	}
	var r heardRounds
	ep.lanes[0].hd.mark(r.at)
	r.at = 100
	ep.rxGot()
	ep.heardFold() // as foDetect does
	if got := ep.lanes[0].hd.last(&r); got != 100 {
		t.Fatalf("lane 0 last heard %d after a message since the round at 100, want 100 (the round's time)", got)
	}
	for i := 0; i < heardSample; i++ {
		ep.rxGot()
	}
	if ep.lanes[0].hd.at == 0 || ep.lanes[2].hd.at == 0 || ep.lanes[1].hd.at != 0 {
		t.Fatalf("after %d messages the times are %d %d %d, want lanes 0 and 2 timed, lane 1 not",
			heardSample, ep.lanes[0].hd.at, ep.lanes[1].hd.at, ep.lanes[2].hd.at)
	}
	// a new binding: what came before stays with lanes 0 and 2
	ep.rxGot()
	ep.heardFold()
	ep.rx = laneSrc{wi: wb, src: 2, bound: true}
	a0, b1 := ep.laneRx(0), ep.laneRx(1)
	ep.rxGot()
	if ep.laneRx(0) != a0 || ep.laneRx(1) != b1+1 {
		t.Fatalf("after rebinding to lane 1's iface: lane 0 %d (was %d), lane 1 %d (was %d); want lane 1 alone to move",
			ep.laneRx(0), a0, ep.laneRx(1), b1)
	}
	// an endpoint of one lane counts every message there
	one := &Endpoint{lanes: []lane{{wi: wa}}}
	one.rx = laneSrc{wi: wb, src: 3, bound: true}
	one.rxGot()
	if one.laneRx(0) != 1 {
		t.Fatalf("one-lane endpoint: lane counter %d, want 1", one.laneRx(0))
	}
}
