package ucp

import (
	"testing"
	"time"
)

// TestBindChurn: rail 0's link goes down and comes back more times than
// an endpoint keeps sources bound (maxBinds). Each time both sides
// rebuild their lane on it, and each rebuilt connection binds a new
// source at the peer. The rail 1 lane's source, bound once at the start
// and carrying the peer's probes all along, must stay bound: with rail 0
// down once more, the peer's acknowledgements over rail 1 are accepted
// (a flush completes) and no message is dropped as a lane mismatch.
func TestBindChurn(t *testing.T) {
	s := relStart(t, relScenario{name: "bind-churn", rails: 2, tls: "rc", mode: "any", epTimeout: 30 * time.Second})
	w, ep := s.nd.w, s.ep
	until := func(what string, cond func() bool) {
		t.Helper()
		ok := false
		s.rails.A[0].Do(func() error {
			for stop := time.Now().Add(20 * time.Second); !ok && time.Now().Before(stop); {
				w.Progress()
				w.lock()
				ok = cond()
				w.unlock()
			}
			return nil
		})
		if !ok {
			w.lock()
			st := ep.foDump()
			w.unlock()
			t.Fatalf("timed out waiting for %s; endpoint: %s", what, st)
		}
	}
	settled := func(lane int) func() bool {
		return func() bool { return ep.amLane == lane && !ep.fo.fov.syncing && ep.lanes[lane].failed == nil }
	}
	until("both lanes' probes answered", func() bool {
		return ep.fo != nil && !ep.lanes[0].prb.heard.IsZero() && !ep.lanes[1].prb.heard.IsZero()
	})
	w.lock()
	before := w.stats.LaneMismatch
	w.unlock()
	for i := 0; i < maxBinds+2; i++ {
		if err := s.rails.A[0].SetLink(false); err != nil {
			t.Fatal(err)
		}
		until("traffic on rail 1", settled(1))
		w.lock()
		peer := ep.fo.syncs.peer
		w.unlock()
		if err := s.rails.A[0].SetLink(true); err != nil {
			t.Fatal(err)
		}
		// back on rail 0, and the peer failed back too (its sync)
		until("traffic back on rail 0", func() bool { return settled(0)() && ep.fo.syncs.peer != peer })
	}
	if err := s.rails.A[0].SetLink(false); err != nil {
		t.Fatal(err)
	}
	until("traffic on rail 1", settled(1))
	f := ep.Flush(nil)
	until("a flush over rail 1", f.Done)
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	w.lock()
	n, nb := w.stats.LaneMismatch-before, len(ep.binds)
	w.unlock()
	if n != 0 {
		t.Fatalf("%d messages dropped as lane mismatches (%d sources bound)", n, nb)
	}
	if err := s.rails.A[0].SetLink(true); err != nil {
		t.Fatal(err)
	}
	s.finish()
}
