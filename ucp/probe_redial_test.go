package ucp

import (
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/internal/fault"
)

// TestProbeRedialNoStall: a lane failed by a black hole that swallows
// everything (the connection manager's TCP too) is dialled again for its
// probes while the hole lasts. The dial must not hold up the worker:
// traffic keeps flowing on the other rail, and no Progress call waits for
// the dial, which here could only end at the endpoint's 30 s timeout.
// Once the hole is gone the lane connects and traffic fails back.
func TestProbeRedialNoStall(t *testing.T) {
	s := relStart(t, relScenario{name: "redial", rails: 2, tls: "rc", mode: "same", epTimeout: 30 * time.Second})
	w, ep := s.nd.w, s.ep
	var longest time.Duration
	progressUntil := func(d time.Duration, done func() bool) bool {
		ok := false
		s.rails.A[0].Do(func() error {
			for stop := time.Now().Add(d); !ok && time.Now().Before(stop); {
				t0 := time.Now()
				w.Progress()
				longest = max(longest, time.Since(t0))
				ok = done()
			}
			return nil
		})
		return ok
	}
	if !progressUntil(10*time.Second, func() bool {
		w.lock()
		defer w.unlock()
		return !ep.lanes[0].prb.heard.IsZero() && !ep.lanes[1].prb.heard.IsZero()
	}) {
		t.Fatalf("the lanes' probes were not answered in 10 s: %+v", w.Stats().Probes)
	}
	undo, err := relEBPF(0, fault.Config{AllIPv4: true})(s)
	if err != nil {
		t.Fatal(err)
	}
	defer undo()
	li := -1
	failed := func() bool {
		for _, ev := range s.events {
			if ev.Kind == failover.FailedOver {
				li = ev.From.Index
				return true
			}
		}
		return false
	}
	if !progressUntil(10*time.Second, failed) {
		t.Fatalf("rail 0 black-holed for 10 s and no failover event; probes %+v, endpoint %v", w.Stats().Probes, ep.Err())
	}
	// Keep the hole for several redial rounds (one per ProbeMisses
	// intervals) while tag messages go round over the other rail.
	pol := w.cfg.Failover
	rounds := 3 * pol.ProbeInterval * time.Duration(pol.ProbeMisses)
	longest = 0
	start := time.Now()
	sent := 0
	for time.Since(start) < rounds && time.Since(start) < 20*time.Second {
		// a message the peer leaves unexpected, and a flush that
		// completes once the peer acknowledged it
		r := ep.TagSend([]byte("through the hole"), mkTag(0, relTagData+1), nil)
		f := ep.Flush(nil)
		if !progressUntil(25*time.Second, func() bool { return r.Done() && f.Done() }) {
			t.Fatalf("a tag send and flush did not complete in 25 s (longest Progress %v, probes %+v)", longest, w.Stats().Probes)
		}
		for _, q := range []*Request{r, f} {
			if err := q.Err(); err != nil {
				t.Fatal(err)
			}
			q.Release()
		}
		sent++
	}
	st := w.Stats().Probes
	w.lock()
	dialed, dialing := ep.lanes[li].prb.dialed, ep.lanes[li].prb.dial != nil
	w.unlock()
	t.Logf("%d sends in %v with rail 0 black-holed; longest Progress %v; lane %d dialled at %v, still dialling %v; probes %+v",
		sent, time.Since(start), longest, li, dialed.Format("15:04:05.000"), dialing, st)
	if dialed.Before(start.Add(-rounds)) || !dialing {
		t.Fatalf("lane %d was not dialled again while the hole lasted (dialled at %v, dialling %v)", li, dialed, dialing)
	}
	if longest > 5*time.Second {
		t.Fatalf("a Progress call took %v while rail 0 was dialled again", longest)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	// The hole gone, the pending dial (TCP retries its SYN) or a later
	// one connects, the lane's probes answer and traffic fails back.
	back := func() bool {
		for _, ev := range s.events {
			if ev.Kind == failover.FailedBack {
				return true
			}
		}
		return false
	}
	healed := time.Now()
	if !progressUntil(40*time.Second, back) {
		t.Fatalf("no fail-back 40 s after the hole was removed; probes %+v, endpoint %v", w.Stats().Probes, ep.Err())
	}
	t.Logf("failed back %v after the hole was removed; longest Progress %v", time.Since(healed), longest)
	s.finish()
}
