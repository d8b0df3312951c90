package ucp

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/uct"
)

func init() {
	// linkwatch: echo as "echo" does, without blocking, and print every
	// failover event ("event/<kind>/<from lane>/<status>") and the
	// endpoint's error ("eperr/<status>") as they come.
	childRoles["linkwatch"] = func(nd *node) error {
		nd.w.SetFailoverHandler(func(ev failover.Event) {
			fmt.Printf("event/%d/%d/%d\n", ev.Kind, ev.From.Index, uct.StatusOf(ev.Cause))
		})
		buf := make([]byte, 4<<20+64)
		deadline := time.Now().Add(3 * time.Minute)
		r := nd.w.TagRecv(buf, 0, 0, nil)
		var s *Request
		for time.Now().Before(deadline) {
			nd.w.Progress()
			select {
			case e := <-nd.errs:
				fmt.Printf("eperr/%d\n", uct.StatusOf(e.err))
			default:
			}
			if s != nil && s.Done() {
				s.Release()
				s = nil
				r = nd.w.TagRecv(buf, 0, 0, nil)
			}
			if s == nil && r.Done() {
				if r.Err() != nil {
					return r.Err()
				}
				info := r.Info()
				if uint32(info.Tag) == tagQuit {
					return nil
				}
				s = info.Sender.TagSend(buf[:info.Length], mkTag(nd.rank, uint32(info.Tag)), nil)
				r.Release()
				if s == nil { // sent at once
					r = nd.w.TagRecv(buf, 0, 0, nil)
				}
			}
		}
		return fmt.Errorf("linkwatch: no quit within the deadline")
	}
}

// childEvent is one line printed by the linkwatch role.
type childEvent struct {
	kind   string // "event" or "eperr"
	fk     failover.Kind
	lane   int
	status uct.Status
}

// nextChildEvent reads the child's next line.
func nextChildEvent(t *testing.T, nd *node) childEvent {
	t.Helper()
	var line string
	if err := nd.kids[1].Scan(60*time.Second, &line); err != nil {
		t.Fatalf("reading the child's report: %v", err)
	}
	if line == connectedLine {
		return childEvent{kind: line}
	}
	f := strings.Split(line, "/")
	n := func(i int) int {
		if i >= len(f) {
			t.Fatalf("child line %q", line)
		}
		v, err := strconv.Atoi(f[i])
		if err != nil {
			t.Fatalf("child line %q: %v", line, err)
		}
		return v
	}
	switch f[0] {
	case "event":
		return childEvent{kind: "event", fk: failover.Kind(n(1)), lane: n(2), status: uct.Status(n(3))}
	case "eperr":
		return childEvent{kind: "eperr", status: uct.Status(n(1))}
	}
	t.Fatalf("child line %q", line)
	return childEvent{}
}

// childWaitFor reads the child's lines until one matches.
func childWaitFor(t *testing.T, nd *node, what string, ok func(childEvent) bool) childEvent {
	t.Helper()
	for i := 0; i < 20; i++ {
		if e := nextChildEvent(t, nd); ok(e) {
			return e
		}
	}
	t.Fatalf("the child did not report %s", what)
	return childEvent{}
}

// spinner progresses a worker on a goroutine of its own until stopped,
// handing its failover events over a channel.
type spinner struct {
	stop, done chan struct{}
}

func spinBackground(w *Worker) *spinner {
	s := &spinner{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			default:
				w.Progress()
			}
		}
	}()
	return s
}

func (s *spinner) halt() {
	close(s.stop)
	<-s.done
}

// Two hosts with two switched rails (netns.NewSwitchedRails), failover to
// any transport: our rail-0 link going down (or its device's RDMA
// disabled) fails our lane 0 with
// ErrLocalNICFailed (seen through the rc iface's link watch); the peer,
// whose own link stays up, is told over rail 1 and fails its lane to us
// with ErrRemoteNICFailed. Both reach the failover events and, if the
// endpoint could not fail over, the error handlers. When it could, the
// link coming back rebuilds our lane (a Restored event with
// ErrLocalNICReinit) and the peer's (ErrRemoteNICReinit), and traffic
// flows.
func TestLinkDownLaneStatus(t *testing.T) {
	for _, how := range []string{"link", "rdma"} {
		t.Run(how, func(t *testing.T) { laneStatusDownUp(t, how) })
	}
}

// laneStatusDownUp is TestLinkDownLaneStatus with our rail-0 device taken
// down by its link (NS.SetLink) or by disabling RDMA on it
// (rc.Iface.SetRDMADisabled).
func laneStatusDownUp(t *testing.T, how string) {
	t.Setenv(epTimeoutEnv, "30s")
	rails, err := netns.NewSwitchedRails(t, 2)
	if err != nil {
		t.Fatal(err)
	}
	pol := failover.DefaultPolicy()
	pol.Mode = failover.AnyTransport
	cfg := Config{ErrorMode: ErrorModePeer, KeepaliveInterval: -1, Failover: pol}
	nd := railsWorldOn(t, rails, "linkwatch", cfg, EnvErrMode+"=peer", EnvKeepalive+"=0", EnvFailover+"=any")
	ep := nd.eps[1]
	if len(ep.lanes) != 2 {
		t.Fatalf("%d lanes, want 2", len(ep.lanes))
	}
	echo := func(tag uint32, n int) {
		t.Helper()
		out, in := pattern(n, byte(tag)), make([]byte, n+1)
		r := nd.w.TagRecv(in, mkTag(1, tag), exact, nil)
		s := ep.TagSend(out, mkTag(0, tag), nil)
		nd.must(nd.wait(s))
		nd.must(nd.wait(r))
		if r.Info().Length != n || !bytes.Equal(in[:n], out) {
			t.Fatalf("echo of %d bytes differs", n)
		}
	}
	echo(1, 100)
	echo(2, 1<<20)

	evs := make(chan failover.Event, 16)
	nd.w.SetFailoverHandler(func(ev failover.Event) { evs <- ev })
	waitEvent := func(what string, ok func(failover.Event) bool) failover.Event {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case ev := <-evs:
				if ok(ev) {
					return ev
				}
				t.Logf("event %v", ev)
			case <-deadline:
				t.Fatalf("no %s event", what)
			}
		}
	}
	sp := spinBackground(nd.w)
	t0 := time.Now()
	setDev := func(up bool) error {
		if how == "link" {
			return rails.A[0].SetLink(up)
		}
		return nd.w.ifaces[0].it.(*rc.Iface).SetRDMADisabled(!up)
	}
	if err := setDev(false); err != nil {
		sp.halt()
		t.Fatal(err)
	}
	t1 := time.Now()
	down := waitEvent("lane 0 down", func(ev failover.Event) bool { return ev.From.Index == 0 && ev.Cause != nil })
	sp.halt()
	nd.w.lock()
	seen, acted := nd.w.linkSeen, nd.w.linkActed
	nd.w.unlock()
	t.Logf("%s down: the switch took %v; the watcher saw the change %v after it began, laneFault ran %v after it began; "+
		"event %v: detect %v, switch %v", how, t1.Sub(t0), seen.Sub(t0), acted.Sub(t0), down.Kind, down.Detect, down.Switch)
	if !errors.Is(down.Cause, uct.ErrLocalNICFailed) {
		t.Fatalf("event %v: cause %v, want ErrLocalNICFailed", down, down.Cause)
	}
	// our worker answers the peer's failover meanwhile
	sp = spinBackground(nd.w)
	peer := childWaitFor(t, nd, "its lane to our downed iface failed", func(e childEvent) bool { return e.kind == "event" })
	sp.halt()
	if peer.lane != 0 || peer.status != uct.ErrRemoteNICFailed {
		t.Fatalf("peer's event: lane %d status %v, want lane 0 ErrRemoteNICFailed", peer.lane, peer.status)
	}
	if err := ep.Err(); err != nil {
		// the endpoint could not fail over: it failed with the lane's status
		if down.Kind != failover.Exhausted || !errors.Is(err, uct.ErrLocalNICFailed) {
			t.Fatalf("endpoint error %v after event %v", err, down)
		}
		select {
		case e := <-nd.errs:
			if !errors.Is(e.err, uct.ErrLocalNICFailed) {
				t.Fatalf("error handler: %v", e.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the error handler did not run")
		}
		pe := childWaitFor(t, nd, "its endpoint's error", func(e childEvent) bool { return e.kind == "eperr" })
		if pe.status != uct.ErrRemoteNICFailed {
			t.Fatalf("peer's endpoint error %v, want ErrRemoteNICFailed", pe.status)
		}
		t.Skip("the endpoint does not fail over on this build: the lane's rebuild after the link comes back is not reachable")
	}
	echo(3, 1<<20) // over rail 1

	// Link back up: the lane is rebuilt, from inside A (the connection
	// manager dials from there).
	if err := setDev(true); err != nil {
		t.Fatal(err)
	}
	err = rails.A[0].Do(func() error {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			nd.w.Progress()
			select {
			case ev := <-evs:
				if ev.Kind == failover.Restored {
					if ev.From.Index != 0 || !errors.Is(ev.Cause, uct.ErrLocalNICReinit) {
						return fmt.Errorf("restored event %v, want lane 0 with ErrLocalNICReinit", ev)
					}
					return nil
				}
			default:
			}
		}
		return fmt.Errorf("lane 0 not rebuilt within 30 s")
	})
	if err != nil {
		t.Fatal(err)
	}
	sp = spinBackground(nd.w)
	peer = childWaitFor(t, nd, "its lane rebuilt", func(e childEvent) bool { return e.kind == "event" && e.fk == failover.Restored })
	sp.halt()
	if peer.lane != 0 || peer.status != uct.ErrRemoteNICReinit {
		t.Fatalf("peer's restored event: lane %d status %v, want lane 0 ErrRemoteNICReinit", peer.lane, peer.status)
	}
	echo(4, 100)
	echo(5, 1<<20)
	nd.quit(1)
	nd.exitOK(1)
}

func FuzzLaneStatus(f *testing.F) {
	f.Add((&laneStatus{dst: 3, status: laneStatusDown, iface: 1}).encode(nil))
	f.Add((&laneStatus{dst: 1 << 20, status: laneStatusUp}).encode(nil))
	f.Add([]byte{1, 0, 0, 0, 9, 0})
	f.Add([]byte{1, 0, 0, 0, 1, maxIfaces})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeLaneStatus(b)
		if err != nil {
			if !errors.Is(err, uct.ErrInvalidParam) {
				t.Fatalf("error %v does not wrap ErrInvalidParam", err)
			}
			return
		}
		if !bytes.Equal(m.encode(nil), b) {
			t.Fatal("lane status round trip")
		}
	})
}

// One host, failover to any transport: disabling our shm device fails
// the shm lane with ErrLocalNICFailed and the peer's with
// ErrRemoteNICFailed; traffic goes on over the rc lane standing by.
// Enabling it again rebuilds both shm lanes (ErrLocalNICReinit,
// ErrRemoteNICReinit) and traffic fails back to shm.
func TestStandbyShmDisabled(t *testing.T) {
	pol := failover.DefaultPolicy()
	pol.Mode = failover.AnyTransport
	ws := standbyPair(t, pol)
	all := ws[:]
	var evs [2][]failover.Event
	for i, w := range ws {
		i := i
		w.SetFailoverHandler(func(ev failover.Event) { evs[i] = append(evs[i], ev) })
	}
	ab, err := ws[0].Connect(ws[1].Address(), EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	ba := tagOver(t, all, ab, ws[1], 1, []byte("over shm"))
	tagOver(t, all, ba, ws[0], 2, pattern(100000, 1))
	has := func(i int, kind failover.Kind, st uct.Status) bool {
		for _, ev := range evs[i] {
			if ev.Kind == kind && ev.From.Transport == "shm" && uct.StatusOf(ev.Cause) == st {
				return true
			}
		}
		return false
	}
	dev := ws[0].ifaces[0].it.(*shm.Iface)
	if err := dev.SetDeviceStatus(uct.DeviceRDMADisabled); err != nil {
		t.Fatal(err)
	}
	spinAll(t, "shm lanes failed over", all, nil, func() bool {
		return has(0, failover.FailedOver, uct.ErrLocalNICFailed) && has(1, failover.FailedOver, uct.ErrRemoteNICFailed)
	})
	for _, ep := range []*Endpoint{ab, ba} {
		if ep.Err() != nil || ep.lanes[ep.amLane].attr.Transport != "rc" {
			t.Fatalf("after the shm device went down: endpoint error %v, AM lane %d", ep.Err(), ep.amLane)
		}
	}
	tagOver(t, all, ab, ws[1], 3, pattern(100, 2))
	tagOver(t, all, ba, ws[0], 4, pattern(100000, 3))
	if err := dev.SetDeviceStatus(uct.DeviceUp); err != nil {
		t.Fatal(err)
	}
	spinAll(t, "shm lanes rebuilt", all, nil, func() bool {
		return has(0, failover.Restored, uct.ErrLocalNICReinit) && has(1, failover.Restored, uct.ErrRemoteNICReinit)
	})
	spinAll(t, "traffic back on shm", all, nil, func() bool {
		ws[0].lock()
		ws[1].lock()
		defer ws[0].unlock()
		defer ws[1].unlock()
		return ab.lanes[ab.amLane].attr.Transport == "shm" && ba.lanes[ba.amLane].attr.Transport == "shm"
	})
	tagOver(t, all, ab, ws[1], 5, pattern(100, 4))
	tagOver(t, all, ba, ws[0], 6, pattern(100000, 5))
	for i, w := range ws {
		if n := w.Stats().LaneMismatch; n != 0 {
			t.Errorf("worker %d: LaneMismatch %d", i, n)
		}
	}
}
