package ucp

import (
	"errors"
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/internal/fault"
	"github.com/ucgo/ucgo/uct"
)

// TestProbeBlackHole: two rc rails between two namespaces, failover on.
// Both lanes answer their probes; then an eBPF black hole swallows every
// packet of rail 0 in both directions. Rail 0 misses its probes while
// rail 1 answers, so it fails with ErrRouteLost, reported in the failover
// event that names it; the time from the black hole to the report is
// logged (DetectBound is one second with the default policy; it is not
// asserted, the machine may be loaded).
func TestProbeBlackHole(t *testing.T) {
	testProbeFault(t, false, func(s *relRun) (func() error, error) {
		return relEBPF(0, fault.Config{BlackHole: true})(s)
	})
}

// TestProbeLinkDown: the same with rail 0's link down on our side and no
// device watcher on either side (they would report the link at once),
// where the lane refuses the probes instead of losing them: refused
// probes count as missed.
func TestProbeLinkDown(t *testing.T) {
	testProbeFault(t, true, func(s *relRun) (func() error, error) {
		return func() error { return s.rails.A[0].SetLink(true) }, s.rails.A[0].SetLink(false)
	})
}

func testProbeFault(t *testing.T, noWatch bool, inject func(*relRun) (func() error, error)) {
	s := relStart(t, relScenario{name: "probe", rails: 2, tls: "rc", mode: "same", noWatch: noWatch})
	w, ep := s.nd.w, s.ep
	if len(ep.lanes) != 2 {
		t.Fatalf("%d lanes, want one per rail", len(ep.lanes))
	}
	rail0 := -1
	for i := range ep.lanes {
		if ep.lanes[i].attr.Device == s.rails.A[0].Link() {
			rail0 = i
		}
	}
	if rail0 < 0 {
		t.Fatalf("no lane on %s", s.rails.A[0].Link())
	}
	// Progress runs in A: a lane connected again from it dials there.
	progressUntil := func(d time.Duration, done func() bool) bool {
		ok := false
		s.rails.A[0].Do(func() error {
			for stop := time.Now().Add(d); !ok && time.Now().Before(stop); {
				w.Progress()
				ok = done()
			}
			return nil
		})
		return ok
	}
	// Both lanes answer (bounded: 10 s).
	if !progressUntil(10*time.Second, func() bool {
		w.lock()
		defer w.unlock()
		return !ep.lanes[0].prb.heard.IsZero() && !ep.lanes[1].prb.heard.IsZero()
	}) {
		t.Fatalf("the lanes' probes were not answered in 10 s: %+v", w.Stats().Probes)
	}
	undo, err := inject(s)
	if err != nil {
		t.Fatal(err)
	}
	defer undo()
	hole := time.Now()
	var ev *failover.Event
	progressUntil(10*time.Second, func() bool {
		for i := range s.events {
			if s.events[i].Kind != failover.FailedBack {
				ev = &s.events[i]
			}
		}
		return ev != nil
	})
	if ev == nil {
		t.Fatalf("rail 0 broken for 10 s and no failover event; probes %+v, endpoint %v", w.Stats().Probes, ep.Err())
	}
	seen := time.Since(hole)
	st := w.Stats().Probes
	t.Logf("fault on rail 0 reported after %v (probes every %v, %d misses; lane silent %v when failed): %v",
		seen, w.cfg.Failover.ProbeInterval, w.cfg.Failover.ProbeMisses, st.LastDetect, ev)
	// Both sides probe: whichever finds it first fails the lane, and the
	// other hears of it in the failover's sync (ROUTE_LOST), or, when the
	// link went down, names the device that is down: ours (LNIC_FAILED)
	// or the peer's (RNIC_FAILED).
	if ev.From.Index != rail0 || !errors.Is(ev.Cause, uct.ErrRouteLost) && !(noWatch && (errors.Is(ev.Cause, uct.ErrRemoteNICFailed) || errors.Is(ev.Cause, uct.ErrLocalNICFailed))) {
		t.Errorf("event %v: want lane %d failed with %v", ev, rail0, uct.ErrRouteLost)
	}
	// The fault removed, the failed lane answers its probes again and
	// comes back up: traffic fails back to it.
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	var back *failover.Event
	progressUntil(10*time.Second, func() bool {
		for i := range s.events {
			if s.events[i].Kind == failover.FailedBack {
				back = &s.events[i]
			}
		}
		return back != nil
	})
	st = w.Stats().Probes
	if back == nil || st.Recovered != 1 {
		t.Fatalf("rail 0 healed 10 s ago: fail-back event %v, probes %+v, endpoint %v", back, st, ep.Err())
	}
	t.Logf("rail 0 healed; fail-back event after %v: %v", time.Since(healed), back)
	// Both sides fail back, each when its own probes answer: traffic
	// settles on rail 0.
	if !progressUntil(10*time.Second, func() bool {
		w.lock()
		defer w.unlock()
		return ep.amLane == rail0 && ep.lanes[rail0].failed == nil
	}) {
		t.Fatalf("rail 0 healed %v ago, yet the AM lane is %d (events %v)", time.Since(healed), ep.amLane, s.events)
	}
	t.Logf("traffic back on rail 0 %v after the fault was removed", time.Since(healed))
	s.finish()
	if s.rep == nil {
		t.Fatal("no report from the peer")
	}
	if st.RouteLost+s.rep.RouteLost == 0 {
		t.Errorf("neither side's probes failed the lane: ours %+v, the peer's %d", st, s.rep.RouteLost)
	}
	t.Logf("lanes failed by probes: %d here, %d at the peer", st.RouteLost, s.rep.RouteLost)
}

// TestProbeBusyLane: a lane whose probes go unanswered (a busy peer
// answers late, or drops the answer when its queue is full) while its
// traffic keeps arriving is alive: rounds of unanswered probes with
// traffic heard after each fail nothing. The same rounds without that
// traffic fail the lane with ErrRouteLost. Two workers of this host:
// shm and an rc lane standing by.
func TestProbeBusyLane(t *testing.T) {
	pol := failover.DefaultPolicy()
	ws := standbyPair(t, pol)
	ab, err := ws[0].Connect(ws[1].Address(), EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	tagOver(t, ws[:], ab, ws[1], 1, []byte("wire up"))
	w := ws[0]
	clock := time.Now() // the rounds' own clock, a round per interval
	rounds := func(traffic bool) {
		w.lock()
		defer w.unlock()
		for i := 0; i < pol.ProbeMisses+1 && ab.err == nil; i++ {
			clock = clock.Add(pol.ProbeInterval)
			sent := clock
			ab.lanes[0].prb.out, ab.lanes[0].prb.sent = true, sent
			ab.lanes[0].prb.sentRx, ab.lanes[0].prb.othersRx = ab.lanes[0].hd.rx, ab.rxOthers(0)
			ab.lanes[1].prb.heard = sent.Add(time.Millisecond)
			if traffic {
				ab.lanes[0].hd.got() // a message on the lane after its probe
			}
			w.judgeProbes(ab, sent.Add(pol.ProbeInterval))
		}
	}
	rounds(true)
	if st := w.Stats().Probes; st.Missed != 0 || st.RouteLost != 0 || ab.Err() != nil {
		t.Fatalf("traffic heard after every probe, yet %+v, endpoint %v", st, ab.Err())
	}
	rounds(false)
	if st := w.Stats().Probes; st.Missed != uint64(pol.ProbeMisses) || st.RouteLost != 1 {
		t.Fatalf("silent lane: %+v, want %d misses and the lane failed", st, pol.ProbeMisses)
	}
	w.lock()
	failed := ab.lanes[0].failed
	w.unlock()
	if !errors.Is(failed, uct.ErrRouteLost) {
		t.Fatalf("lane 0 failed with %v, want %v", failed, uct.ErrRouteLost)
	}
}

// TestProbeStandbyIdle: the rc lane standing by beside shm may be on an
// iface Progress polls only now and then (every 16384 calls, while no
// event came there); its probes' answers wait there. Each probe round polls it first, so a worker that
// calls Progress slowly still hears its standby lane and fails nothing.
func TestProbeStandbyIdle(t *testing.T) {
	pol := failover.DefaultPolicy()
	pol.ProbeInterval = 20 * time.Millisecond
	ws := standbyPair(t, pol)
	ab, err := ws[0].Connect(ws[1].Address(), EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	tagOver(t, ws[:], ab, ws[1], 1, []byte("wire up"))
	if len(ab.lanes) != 2 || !ab.lanes[1].standby {
		t.Fatalf("want shm and an rc lane standing by: %d lanes", len(ab.lanes))
	}
	// About 2000 calls in a second, far from the 16384 of an idle poll.
	for stop := time.Now().Add(time.Second); time.Now().Before(stop); {
		ws[0].Progress()
		ws[1].Progress()
		time.Sleep(500 * time.Microsecond)
	}
	st := ws[0].Stats().Probes
	ws[0].lock()
	heard, failed := ab.lanes[1].prb.heard, ab.lanes[1].failed
	ws[0].unlock()
	if st.RouteLost != 0 || failed != nil || heard.IsZero() || st.Answered < st.Sent/2 {
		t.Fatalf("standby lane: probes %+v, last answer %v, failed %v", st, heard, failed)
	}
	t.Logf("probes %+v", st)
}
