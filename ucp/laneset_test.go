package ucp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/internal/testproc"
	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/uct"
)

// UCGO_NET_DEVICES parses into Config.NetDevices, and a context built
// from it has one rc component per named netdev (a netdev that does not
// exist is refused).
func TestNetDevicesEnv(t *testing.T) {
	for _, c := range []struct {
		v    string
		want []string
		bad  bool
	}{
		{"lo", []string{"lo"}, false},
		{" lo , eth0,lo", []string{"lo", "eth0"}, false},
		{"all", []string{"all"}, false},
		{"all,lo", nil, true},
		{",", nil, true},
		{"a/b", nil, true},
		{"averyveryverylongname", nil, true},
	} {
		var cfg Config
		err := readEnv(&cfg, func(k string) string {
			if k == EnvNetDevices {
				return c.v
			}
			return ""
		})
		if c.bad {
			if !errors.Is(err, uct.ErrInvalidParam) {
				t.Errorf("%q: error %v, want ErrInvalidParam", c.v, err)
			}
			continue
		}
		if err != nil || fmt.Sprint(cfg.NetDevices) != fmt.Sprint(c.want) {
			t.Errorf("%q: %v, %v; want %v", c.v, cfg.NetDevices, err, c.want)
		}
	}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	ctx, err := newContext(Config{}, env(EnvTLS, "rc", EnvNetDevices, "lo"))
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	ts := ctx.Config().Transports
	if len(ts) != 1 || ts[0].Name() != "rc" {
		t.Fatalf("UCGO_TLS=rc UCGO_NET_DEVICES=lo: transports %v", ts)
	}
	if _, err := newContext(Config{}, env(EnvNetDevices, "ucgo-nosuchdev")); !errors.Is(err, uct.ErrInvalidParam) {
		t.Fatalf("a netdev that does not exist: %v, want ErrInvalidParam", err)
	}
	// Transports the program chose are kept as chosen.
	ctx2, err := newContext(Config{Transports: []uct.Component{shm.New()}, NetDevices: []string{"lo"}}, env())
	if err != nil {
		t.Fatal(err)
	}
	defer ctx2.Close()
	if ts := ctx2.Config().Transports; len(ts) != 1 || ts[0].Name() != "shm" {
		t.Fatalf("program's transports replaced: %v", ts)
	}
}

// standbyPair opens two workers of one host over shm and rc on loopback
// with failover policy fo.
func standbyPair(t *testing.T, fo failover.Policy) [2]*Worker {
	t.Helper()
	var ws [2]*Worker
	for i := range ws {
		ts := []uct.Component{shm.New(), rc.New(rc.Config{Device: "lo", Addr: netip.MustParseAddr("127.0.0.1"), Port: -1})}
		ctx, err := newContext(Config{Transports: ts, Failover: fo}, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ctx.Close() })
		w, err := ctx.NewWorker()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		ws[i] = w
	}
	return ws
}

// tagOver sends msg from ep to w with tag and checks what arrives.
func tagOver(t *testing.T, ws []*Worker, ep *Endpoint, to *Worker, tag uint64, msg []byte) *Endpoint {
	t.Helper()
	in := make([]byte, len(msg)+1)
	r := to.TagRecv(in, tag, exact, nil)
	s := ep.TagSend(msg, tag, nil)
	spinAll(t, fmt.Sprintf("tag %d, %d bytes", tag, len(msg)), ws, nil, func() bool { return r.Done() && s.Done() })
	if r.Err() != nil || s.Err() != nil || !bytes.Equal(in[:r.Info().Length], msg) {
		t.Fatalf("tag %d, %d bytes: recv %v, send %v", tag, len(msg), r.Err(), s.Err())
	}
	return r.Info().Sender
}

// With failover to any transport, an endpoint between two workers of one
// host has shm as its lane and rc standing by; both lanes are bound, so
// messages the peer sends over the standby lane are accepted, and RMA
// over it finds the key of the right memory domain. With failover off
// the endpoint has the shm lane alone.
func TestStandbyLane(t *testing.T) {
	off := standbyPair(t, failover.Policy{})
	ep, err := off[0].Connect(off[1].Address(), EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ep.lanes) != 1 || ep.lanes[0].attr.Transport != "shm" {
		t.Fatalf("failover off: %d lanes, want the shm lane alone", len(ep.lanes))
	}

	pol := failover.DefaultPolicy()
	pol.Mode = failover.AnyTransport
	ws := standbyPair(t, pol)
	all := ws[:]
	lanes, err := ws[0].LanesTo(ws[1].Address())
	if err != nil {
		t.Fatal(err)
	}
	if len(lanes) != 2 || lanes[0].Transport != "shm" || lanes[1].Transport != "rc" || !lanes[1].Standby || lanes[1].Fallback {
		t.Fatalf("LanesTo: %+v, want shm then rc standing by", lanes)
	}
	ab, err := ws[0].Connect(ws[1].Address(), EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ab.lanes) != 2 || ab.lanes[0].attr.Transport != "shm" || ab.lanes[1].attr.Transport != "rc" || !ab.lanes[1].standby {
		t.Fatalf("lanes %+v, want shm and a standby rc", ab.lanes)
	}
	if ab.amLane != 0 || ab.rmaLane != 0 {
		t.Fatalf("AM lane %d, RMA lane %d: the standby lane was chosen", ab.amLane, ab.rmaLane)
	}
	ba := tagOver(t, all, ab, ws[1], 1, []byte("over shm"))
	// both ends bind the other's rc lane
	spinAll(t, "lane-binds", all, nil, func() bool {
		ws[0].lock()
		ws[1].lock()
		defer ws[0].unlock()
		defer ws[1].unlock()
		return len(ab.binds) == 1 && len(ba.binds) == 1
	})
	// messages over the standby lane are accepted both ways
	for _, ep := range []*Endpoint{ab, ba} {
		ep.w.lock()
		ep.amLane = 1
		ep.w.unlock()
	}
	tagOver(t, all, ab, ws[1], 2, pattern(100, 1))
	tagOver(t, all, ab, ws[1], 3, pattern(100000, 2)) // rendezvous
	tagOver(t, all, ba, ws[0], 4, pattern(3000, 3))
	// RMA over the rc lane with a key bundle of every memory domain
	target := make([]byte, 1<<16)
	mem, err := ws[1].MemMap(target)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	rk, err := ab.UnpackRKey(mem.PackRKey())
	if err != nil {
		t.Fatal(err)
	}
	defer rk.Close()
	ws[0].lock()
	ab.rmaLane = 1
	ws[0].unlock()
	src := pattern(len(target), 9)
	p := ab.Put(src, mem.Address(), rk, nil)
	spinAll(t, "put over rc", all, nil, p.Done)
	back := make([]byte, len(target))
	g := ab.Get(back, mem.Address(), rk, nil)
	spinAll(t, "get over rc", all, nil, g.Done)
	if p.Err() != nil || g.Err() != nil || !bytes.Equal(target, src) || !bytes.Equal(back, src) {
		t.Fatalf("put/get over the standby lane: %v, %v", p.Err(), g.Err())
	}
	for i, w := range ws {
		if n := w.Stats().LaneMismatch; n != 0 {
			t.Errorf("worker %d: LaneMismatch = %d", i, n)
		}
	}
}

// A lane-bind with a wrong token for another peer's endpoint binds
// nothing: it is dropped and counted as a lane mismatch, and the forger's
// messages naming that endpoint are still dropped.
func TestLaneBindForgedToken(t *testing.T) {
	v := hostileWorker(t, Config{})
	var drops []DropEvent
	v.SetDropHandler(func(e DropEvent) { drops = append(drops, e) })
	_, _, vToL := legitPeer(t, v)
	p := newRawPeer(t, v)
	v.lock()
	tok := vToL.peerToken
	v.unlock()
	if tok == 0 {
		t.Fatal("the legitimate peer's wireup carried no token")
	}
	before := v.Stats().LaneMismatch
	p.send(amLaneBind, (&laneBind{dst: vToL.id, token: tok ^ 1}).encode(nil))
	p.settle()
	if n := v.Stats().LaneMismatch; n != before+1 {
		t.Fatalf("LaneMismatch went from %d to %d after a forged lane-bind, want one more", before, n)
	}
	if len(drops) == 0 || drops[len(drops)-1].Reason != DropLaneMismatch || drops[len(drops)-1].Endpoint != vToL ||
		!errors.Is(drops[len(drops)-1].Err, uct.ErrInvalidParam) {
		t.Fatalf("drop events %+v, want a lane mismatch of the legitimate peer's endpoint", drops)
	}
	v.lock()
	nb := len(vToL.binds)
	v.unlock()
	if nb != 0 {
		t.Fatalf("the forged lane-bind bound %d sources", nb)
	}
	var h [eagerHdr]byte
	putEagerHdr(h[:], 9, vToL.id)
	p.send(amEager, append(h[:], "forged"...))
	p.settle()
	if n := v.Stats().LaneMismatch; n != before+2 {
		t.Fatalf("a message after the forged lane-bind: LaneMismatch %d, want %d", n, before+2)
	}
	// malformed lane-binds are ignored
	p.send(amLaneBind, []byte{1, 2, 3})
	p.settle()
	if n := v.Stats().LaneMismatch; n != before+2 {
		t.Fatalf("a malformed lane-bind counted: %d", n)
	}
}

func FuzzLaneBind(f *testing.F) {
	f.Add((&laneBind{dst: 3, token: 0x1122334455667788}).encode(nil))
	f.Add([]byte{})
	f.Add(make([]byte, laneBindLen+1))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeLaneBind(b)
		if err != nil {
			if !errors.Is(err, uct.ErrInvalidParam) {
				t.Fatalf("error %v does not wrap ErrInvalidParam", err)
			}
			return
		}
		if !bytes.Equal(m.encode(nil), b) {
			t.Fatal("lane-bind round trip")
		}
	})
}

// railsWorld is world for two ranks over rc across two namespaces joined
// by n rails (veth pairs, netns.NewRails), each worker with one rc iface
// per rail (UCGO_NET_DEVICES=all): this process in A, the child in B.
func railsWorld(t testing.TB, n int, role string, cfg Config, env ...string) (*node, *netns.Rails) {
	t.Helper()
	t.Setenv(epTimeoutEnv, "30s")
	rails, err := netns.NewRails(t, n)
	if err != nil {
		t.Fatal(err)
	}
	return railsWorldOn(t, rails, role, cfg, env...), rails
}

// railsWorldOn is railsWorld on rails the caller made.
func railsWorldOn(t testing.TB, rails *netns.Rails, role string, cfg Config, env ...string) *node {
	t.Helper()
	cfg.SourceTagMask = srcMask
	nd := &node{t: t, n: 2, procs: make([]*exec.Cmd, 2), kids: make([]*testproc.Child, 2), errs: make(chan epErr, 16)}
	env = append([]string{EnvTLS + "=rc", EnvNetDevices + "=all"}, env...)
	getenv := func(k string) string {
		for _, kv := range env {
			if a, b, _ := strings.Cut(kv, "="); a == k {
				return b
			}
		}
		return ""
	}
	err := rails.A[0].Do(func() error {
		ctx, err := newContext(cfg, getenv)
		if err != nil {
			return err
		}
		w, err := ctx.NewWorker()
		if err != nil {
			ctx.Close()
			return err
		}
		nd.ctx, nd.w = ctx, w
		t.Cleanup(func() {
			w.Close()
			ctx.Close()
		})
		return nil
	})
	if err != nil {
		t.Fatalf("worker in %s: %v", rails.A[0].Name(), err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	inW, _, a := nd.startChild(rails.B[0].Command(self, "-test.run=^$"), role, 1, env)
	addrs := []string{hex.EncodeToString(nd.w.Address()), a}
	fmt.Fprintln(inW, strings.Join(addrs, " "))
	if err := rails.A[0].Do(func() error { return nd.connectAll(addrs) }); err != nil {
		t.Fatalf("connect from %s: %v", rails.A[0].Name(), err)
	}
	return nd
}

// Two namespaces joined by two rails: each worker has an rc iface per
// rail and the endpoint one rc lane per rail, each to the peer's iface in
// its own subnet (the cross pairs, which cannot reach each other, are not
// tried); both lanes are bound, so traffic over the second lane is
// accepted by the peer.
func TestRailsLanes(t *testing.T) {
	nd, rails := railsWorld(t, 2, "echo", Config{})
	ep := nd.eps[1]
	if len(ep.lanes) != 2 {
		t.Fatalf("%d lanes, want one per rail", len(ep.lanes))
	}
	for i, ln := range ep.lanes {
		a, err := rc.DecodeAddress(ln.raddr)
		if err != nil {
			t.Fatal(err)
		}
		if ln.attr.Transport != "rc" || ln.attr.Device != rails.A[i].Link() || a.IP != rails.B[i].Addr() || ln.standby {
			t.Fatalf("lane %d: %s on %s to %s (standby %v), want rc on %s to %s", i, ln.attr.Transport, ln.attr.Device,
				a.IP, ln.standby, rails.A[i].Link(), rails.B[i].Addr())
		}
	}
	lanes, err := nd.w.LanesTo(nd.w.Address())
	if err != nil {
		t.Fatal(err)
	}
	if len(lanes) != 2 || lanes[0].Device != rails.A[0].Link() || lanes[1].Device != rails.A[1].Link() {
		t.Fatalf("LanesTo: %+v", lanes)
	}
	echo := func(tag uint32, n int) {
		out, in := pattern(n, byte(tag)), make([]byte, n+1)
		r := nd.w.TagRecv(in, mkTag(1, tag), exact, nil)
		s := ep.TagSend(out, mkTag(0, tag), nil)
		nd.must(nd.wait(s))
		nd.must(nd.wait(r))
		if r.Info().Length != n || !bytes.Equal(in[:n], out) {
			t.Fatalf("echo of %d bytes on lane %d differs", n, ep.amLane)
		}
	}
	for i, n := range []int{8, 5000, 1 << 20} {
		echo(uint32(10+i), n)
	}
	nd.w.lock()
	ep.amLane = 1
	nd.w.unlock()
	for i, n := range []int{8, 5000, 1 << 20} {
		echo(uint32(20+i), n)
	}
	nd.w.lock()
	nb, mism := len(ep.binds), nd.w.stats.LaneMismatch
	nd.w.unlock()
	if nb != 1 || mism != 0 {
		t.Fatalf("%d sources bound by lane-binds (want 1), LaneMismatch %d", nb, mism)
	}
	nd.quit(1)
	nd.exitOK(1)
}
