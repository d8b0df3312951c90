package ucp

import (
	"errors"
	"testing"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/uct"
)

// setShm sets the status of w's shared-memory device.
func setShm(t *testing.T, w *Worker, s uct.DeviceStatus) {
	t.Helper()
	for _, wi := range w.ifaces {
		if !wi.attr.Cap.Has(uct.CapSharedMemory) {
			continue
		}
		d, ok := wi.it.(interface {
			SetDeviceStatus(uct.DeviceStatus) error
		})
		if !ok {
			t.Fatalf("%s cannot be disabled", wi.md.comp.Name())
		}
		if err := d.SetDeviceStatus(s); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("the worker has no shared-memory iface")
}

// TestSameTransportLanes: under failover.SameTransport traffic never
// changes transport. An endpoint between two workers of one host that
// has an rc lane standing by beside its shm lane (connected under
// AnyTransport, then held to SameTransport) does not move to rc: when
// its own shm device is disabled, or when its peer (still under
// AnyTransport) loses its shm device and moves to rc, the endpoint fails
// and the handler hears that no lane was left, never a failover to rc.
func TestSameTransportLanes(t *testing.T) {
	for _, who := range []string{"own", "peer"} {
		t.Run(who, func(t *testing.T) {
			pol := failover.DefaultPolicy()
			pol.Mode = failover.AnyTransport
			ws := standbyPair(t, pol)
			all := ws[:]
			ab, err := ws[0].Connect(ws[1].Address(), EPParams{})
			if err != nil {
				t.Fatal(err)
			}
			if len(ab.lanes) != 2 || ab.lanes[0].attr.Transport != "shm" || ab.lanes[1].attr.Transport != "rc" {
				t.Fatalf("lanes %+v, want shm and a standby rc", ab.lanes)
			}
			ba := tagOver(t, all, ab, ws[1], 1, []byte("over shm"))
			spinAll(t, "lane-binds", all, nil, func() bool {
				ws[0].lock()
				ws[1].lock()
				defer ws[0].unlock()
				defer ws[1].unlock()
				return len(ab.binds) == 1 && len(ba.binds) == 1
			})
			var evs []failover.Event
			ws[0].SetFailoverHandler(func(e failover.Event) { evs = append(evs, e) })
			ws[0].lock()
			ws[0].cfg.Failover.Mode = failover.SameTransport
			ws[0].unlock()
			if who == "own" {
				setShm(t, ws[0], uct.DeviceDown)
			} else {
				setShm(t, ws[1], uct.DeviceDown)
			}
			// traffic from the side whose shm device is down, until our
			// endpoint fails: under "peer" the peer moves to rc and
			// tells us over it before we send anything
			from := ab
			if who == "peer" {
				from = ba
			}
			for i := 0; ab.Err() == nil && i < 1000; i++ {
				s := from.TagSend([]byte("after the fault"), 2, nil)
				spinAll(t, "a send after the fault", all, nil, func() bool { return s.Done() || ab.Err() != nil })
				ws[0].lock()
				am, failed := ab.amLane, ab.err != nil
				ws[0].unlock()
				if !failed && am >= 0 && ab.lanes[am].attr.Transport != "shm" {
					t.Fatalf("under SameTransport the endpoint's traffic moved to lane %d (%s)", am, ab.lanes[am].attr.Transport)
				}
			}
			err = ab.Err()
			if err == nil {
				t.Fatal("shm disabled under SameTransport, yet the endpoint did not fail")
			}
			spinAll(t, "the failover events", all, nil, func() bool { return len(evs) > 0 })
			for _, e := range evs {
				if e.Kind == failover.FailedOver {
					t.Fatalf("under SameTransport: %v", e)
				}
			}
			if evs[0].Kind != failover.Exhausted {
				t.Fatalf("event %v, want no lane left", evs[0])
			}
			if errors.Is(err, uct.ErrPeerFailed) {
				t.Fatalf("endpoint failed with %v, a dead peer", err)
			}
			t.Logf("endpoint failed with %v; %v", err, evs[0])
		})
	}
}

// TestSameTransportPick: lane choice itself keeps to the endpoint's
// transport under SameTransport: with the shm lane failed, pickLanes
// finds no lane rather than choosing the rc lane standing by (which
// AnyTransport does), whichever path (a fault, the peer's sync, a lane
// rebuilt, a fail-back) asks it to choose again.
func TestSameTransportPick(t *testing.T) {
	pol := failover.DefaultPolicy()
	pol.Mode = failover.AnyTransport
	ws := standbyPair(t, pol)
	ab, err := ws[0].Connect(ws[1].Address(), EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	tagOver(t, ws[:], ab, ws[1], 1, []byte("over shm"))
	w := ws[0]
	w.lock()
	defer w.unlock()
	if len(ab.lanes) != 2 || ab.lanes[1].attr.Transport != "rc" {
		t.Fatalf("lanes %+v, want shm and a standby rc", ab.lanes)
	}
	ab.lanes[0].failed = uct.ErrLocalNICFailed
	defer func() { ab.lanes[0].failed = nil; ab.pickLanes() }()
	if !ab.pickLanes() || ab.amLane != 1 {
		t.Fatalf("AnyTransport, shm failed: AM lane %d, want the rc lane", ab.amLane)
	}
	w.cfg.Failover.Mode = failover.SameTransport
	if ab.pickLanes() {
		t.Fatalf("SameTransport, shm failed: AM lane %d (%s), RMA lane %d: want none", ab.amLane,
			ab.lanes[ab.amLane].attr.Transport, ab.rmaLane)
	}
	w.cfg.Failover.Mode = failover.AnyTransport
}
