package ucp

import (
	"errors"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/fault"
	"github.com/ucgo/ucgo/uct"
)

// TestConnectRailDead: with failover on, two workers connect while one of
// their two rails carries nothing (every IPv4 packet dropped, the
// connection manager's too). Connect does not wait for that rail's
// timeout: the endpoint comes up on the other rail within connectRails'
// grace, with the dead rail's lane failed and its connection still going
// on. Traffic flows; once the rail carries packets again, the pending
// connection completes, the lane's probes are answered and it comes up.
func TestConnectRailDead(t *testing.T) {
	s := relStart(t, relScenario{name: "dead-rail", rails: 2, tls: "rc", mode: "same", epTimeout: 30 * time.Second,
		early: relEBPF(0, fault.Config{AllIPv4: true})})
	w, ep := s.nd.w, s.ep
	t.Logf("Connect took %v with rail 0 dead", s.connectTook)
	if s.connectTook > 20*time.Second {
		t.Fatalf("Connect took %v: it waited for the dead rail", s.connectTook)
	}
	dead := -1
	w.lock()
	for i := range ep.lanes {
		if ep.lanes[i].attr.Device == s.rails.A[0].Link() {
			dead = i
		}
	}
	var failed error
	dialing := false
	if dead >= 0 {
		failed, dialing = ep.lanes[dead].failed, ep.lanes[dead].prb.dial != nil
	}
	n := len(ep.lanes)
	w.unlock()
	if dead < 0 || n != 2 {
		t.Fatalf("%d lanes, rail 0's at %d: want both rails' lanes", n, dead)
	}
	if !errors.Is(failed, uct.ErrTimedOut) || !dialing {
		t.Fatalf("rail 0's lane: failed %v, still connecting %v; want ErrTimedOut and connecting", failed, dialing)
	}
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
	for i := 0; i < 20; i++ {
		r := ep.TagSend([]byte("over rail 1"), mkTag(0, relTagData+1), nil)
		f := ep.Flush(nil)
		if !progressUntil(25*time.Second, func() bool { return r.Done() && f.Done() }) {
			t.Fatalf("send %d and flush did not complete in 25 s", i)
		}
		for _, q := range []*Request{r, f} {
			if err := q.Err(); err != nil {
				t.Fatal(err)
			}
			q.Release()
		}
	}
	if err := s.earlyUndo(); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	if !progressUntil(40*time.Second, func() bool {
		w.lock()
		defer w.unlock()
		return ep.lanes[dead].failed == nil && ep.lanes[dead].ep != nil
	}) {
		t.Fatalf("rail 0's lane not up 40 s after the rail came back; probes %+v, endpoint %v", w.Stats().Probes, ep.Err())
	}
	t.Logf("rail 0's lane up %v after the rail came back (%d failover events)", time.Since(healed), len(s.events))
	s.finish()
}
