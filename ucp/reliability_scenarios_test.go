package ucp

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/multierr"

	"github.com/ucgo/ucgo/internal/fault"
	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/uct"
)

// The scenarios of the reliability suite: 1 % loss on one rail for 20 s,
// the link flapping every 200 ms for 10 s, and shorter runs for the rest,
// which keeps the suite near a minute and a half of traffic.
func relScenarios() []relScenario {
	return []relScenario{
		{name: "no-fault", rails: 2, tls: "rc", run: 3 * time.Second, path: true, check: relNoFault},
		{name: "linkdown", rails: 2, tls: "rc", run: 4 * time.Second, at: time.Second, heal: 2500 * time.Millisecond,
			path: true, fault: func(s *relRun) (func() error, error) {
				return func() error { return s.rails.A[0].SetLink(true) }, s.rails.A[0].SetLink(false)
			}},
		{name: "loss-1%", rails: 2, tls: "rc", run: 21 * time.Second, at: 500 * time.Millisecond, heal: 20500 * time.Millisecond,
			path: true, fault: relEBPF(0, fault.Config{Fraction: 0.01})},
		{name: "corrupt-2%", rails: 2, tls: "rc", run: 3 * time.Second, at: 500 * time.Millisecond, heal: 2500 * time.Millisecond,
			path: true, fault: relEBPF(0, fault.Config{Fraction: 0.02, Corrupt: true, CorruptOffset: 20})},
		// a rail that carries nothing, the connection manager's TCP
		// included, so the lane dialled again for its probes waits
		// for the hole's end
		{name: "blackhole", rails: 2, tls: "rc", run: 7 * time.Second, at: time.Second, heal: 3500 * time.Millisecond,
			path: true, fault: relEBPF(0, fault.Config{AllIPv4: true})},
		{name: "flap-200ms", rails: 2, tls: "rc", run: 11 * time.Second, at: 500 * time.Millisecond, heal: 10500 * time.Millisecond,
			path: true, fault: func(s *relRun) (func() error, error) {
				done := make(chan error, 1)
				go func() { done <- s.rails.A[0].Flap(200*time.Millisecond, 200*time.Millisecond, 25) }()
				return func() error {
					select {
					case err := <-done:
						return err
					case <-time.After(30 * time.Second):
						return errors.New("the flap did not end")
					}
				}, nil
			}},
		{name: "shm-disabled", rails: 1, tls: "shm,rc", run: 3 * time.Second, at: time.Second,
			path: true, fault: relShmDown},
		{name: "both-down", rails: 2, tls: "rc", run: 3 * time.Second, at: time.Second, epTimeout: 3 * time.Second,
			path: false, check: relBothDown, fault: func(s *relRun) (func() error, error) {
				return nil, multierr.Append(s.rails.A[0].SetLink(false), s.rails.A[1].SetLink(false))
			}},
		{name: "peer-killed", rails: 2, tls: "rc", run: 3 * time.Second, at: time.Second,
			path: false, check: relKilled, fault: func(s *relRun) (func() error, error) {
				return nil, s.child.Kill()
			}},
	}
}

// relEBPF attaches the fault to the ingress of both ends of rail i.
func relEBPF(i int, cfg fault.Config) func(*relRun) (func() error, error) {
	return func(s *relRun) (func() error, error) {
		var fs []*fault.Fault
		var once sync.Once
		var uerr error
		undo := func() error {
			once.Do(func() { uerr = closeFaults(s, i, fs) })
			return uerr
		}
		for _, ns := range []*netns.NS{s.rails.A[i], s.rails.B[i]} {
			err := ns.Do(func() error {
				f, err := fault.Drop(ns.Link(), cfg)
				if err == nil {
					fs = append(fs, f)
				}
				return err
			})
			if err != nil {
				return undo, err
			}
		}
		s.t.Cleanup(func() { undo() })
		return undo, nil
	}
}

// closeFaults logs what the faults on rail i did and removes them.
func closeFaults(s *relRun, i int, fs []*fault.Fault) error {
	var err error
	for _, f := range fs {
		st, _ := f.Stats()
		s.t.Logf("%s: fault on rail %d: %d matched, %d dropped, %d corrupted", s.sc.name, i, st.Seen, st.Dropped, st.Corrupted)
		err = multierr.Append(err, f.Close())
	}
	return err
}

// relShmDown disables this side's shm device (between operations: it
// runs on the worker's goroutine).
func relShmDown(s *relRun) (func() error, error) {
	for _, wi := range s.nd.w.ifaces {
		if !wi.attr.Cap.Has(uct.CapSharedMemory) {
			continue
		}
		d, ok := wi.it.(interface {
			SetDeviceStatus(uct.DeviceStatus) error
		})
		if !ok {
			return nil, fmt.Errorf("%s cannot be disabled", wi.md.comp.Name())
		}
		return func() error { return d.SetDeviceStatus(uct.DeviceUp) }, d.SetDeviceStatus(uct.DeviceDown)
	}
	return nil, errors.New("the worker has no shared-memory iface")
}

// relBothDown: with no lane left the endpoint fails with a status that
// names the broken part (the local links are down), never a dead peer.
func relBothDown(t *testing.T, s *relRun) {
	err := s.ep.Err()
	switch {
	case err == nil:
		t.Error("both rails down, yet the endpoint did not fail")
	case errors.Is(err, uct.ErrPeerFailed):
		t.Errorf("both rails down: endpoint failed with %v, a dead peer", err)
	case relMode() != "off" && !errors.Is(err, uct.ErrLocalNICFailed):
		t.Errorf("both rails down: endpoint failed with %v, want %v", err, uct.ErrLocalNICFailed)
	}
}

// relNoFault: traffic alone, however heavy, fails no lane.
func relNoFault(t *testing.T, s *relRun) {
	for _, ev := range s.events {
		t.Errorf("no fault, yet a failover event: %v", ev)
	}
	if st := s.nd.w.Stats(); st.Probes.RouteLost != 0 || st.FailedOver != 0 {
		t.Errorf("no fault, yet %d lanes failed by probes, %d failovers", st.Probes.RouteLost, st.FailedOver)
	}
}

// relKilled: a killed peer fails the endpoint with PROC_FAILED and is
// never failed over.
func relKilled(t *testing.T, s *relRun) {
	if err := s.ep.Err(); !errors.Is(err, uct.ErrPeerFailed) {
		t.Errorf("peer killed: endpoint status %v, want %v", err, uct.ErrPeerFailed)
	}
	st := s.nd.w.Stats()
	if st.FailedOver != 0 || st.Probes.RouteLost != 0 {
		t.Errorf("peer killed, yet %d failovers and %d lanes failed by probes", st.FailedOver, st.Probes.RouteLost)
	}
	for _, ev := range s.events {
		t.Errorf("peer killed, yet a failover event: %v", ev)
	}
}
