package ucp

import (
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/uct"
)

// TestStandbyIfaceIdle: an rc iface that carries only a lane standing by
// beside shm receives lane-binds, probes and their answers, but stays on
// the idle poll schedule (a poll of it is a system call on every
// Progress otherwise), while the probes crossing it are still answered
// and heard, and it becomes active once the lane carries the
// conversation.
func TestStandbyIfaceIdle(t *testing.T) {
	pol := failover.DefaultPolicy()
	pol.Mode = failover.AnyTransport
	pol.ProbeInterval = 20 * time.Millisecond
	ws := standbyPair(t, pol)
	all := ws[:]
	ab, err := ws[0].Connect(ws[1].Address(), EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	ba := tagOver(t, all, ab, ws[1], 1, []byte("over shm"))
	rcIface := func(w *Worker) *wiface {
		for _, wi := range w.ifaces {
			if !wi.attr.Cap.Has(uct.CapSharedMemory) {
				return wi
			}
		}
		t.Fatal("no rc iface")
		return nil
	}
	answered := func(w *Worker) bool { return w.Stats().Probes.Answered >= 3 }
	// spin (bounded) until both ends had several probes of both lanes
	// answered, with tag traffic over shm meanwhile
	deadline := time.Now().Add(30 * time.Second)
	for tag := uint64(2); !answered(ws[0]) || !answered(ws[1]); tag++ {
		if time.Now().After(deadline) {
			t.Fatalf("probes unanswered: %+v / %+v", ws[0].Stats().Probes, ws[1].Stats().Probes)
		}
		tagOver(t, all, ab, ws[1], tag, []byte("ping"))
		for i := 0; i < 1000; i++ {
			ws[0].Progress()
			ws[1].Progress()
		}
	}
	for i, w := range ws {
		ep := []*Endpoint{ab, ba}[i]
		w.lock()
		binds, rcLane := len(ep.binds), ep.amLane
		w.unlock()
		if binds != 1 || rcLane != 0 {
			t.Fatalf("worker %d: %d lane-binds, AM lane %d; want the rc lane bound and shm carrying", i, binds, rcLane)
		}
		if st := w.Stats().Probes; st.RouteLost != 0 {
			t.Fatalf("worker %d: probes %+v: a lane was failed", i, st)
		}
		if rcIface(w).active.Load() {
			t.Fatalf("worker %d: the rc iface that only stands by is polled on every Progress", i)
		}
	}
	// the conversation moves to the rc lane: its iface becomes active on
	// both ends
	for i, ep := range []*Endpoint{ab, ba} {
		ws[i].lock()
		ep.amLane = 1
		ep.lanesPicked()
		ws[i].unlock()
	}
	tagOver(t, all, ab, ws[1], 1000, pattern(100, 1))
	for i, w := range ws {
		if !rcIface(w).active.Load() {
			t.Fatalf("worker %d: rc iface idle while it carries the AM lane", i)
		}
	}
}
