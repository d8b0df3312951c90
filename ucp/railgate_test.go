package ucp

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/uct"
)

// gateRun feeds g the completions of transfers started through it, each
// of size bytes, the way taking wayDur[way] ns per transfer, one at a
// time, until n transfers completed; it returns the ways taken.
func gateRun(g *railGate, n, size int, wayDur [2]int64, now *int64) []gateWay {
	var ways []gateWay
	for i := 0; i < n; i++ {
		way, gen, hold := g.start(*now)
		if hold {
			panic("a transfer held with nothing in flight")
		}
		*now += wayDur[way]
		g.done(gen, g.era, size, *now)
		ways = append(ways, way)
	}
	return ways
}

func countWay(ways []gateWay, w gateWay) int {
	n := 0
	for _, x := range ways {
		if x == w {
			n++
		}
	}
	return n
}

// The gate's rule alone: it starts on one rail, probes striping after
// the first epoch and stripes at once when striping moves twice as
// much; it keeps striping while one rail is clearly slower (probing ever
// more rarely), moves to one rail when that is faster, back when
// striping is faster again, and to one rail, where it stays, when
// striping moves more by less than the margin.
func TestRailGateRule(t *testing.T) {
	var g railGate
	g.reset()
	var now int64
	const size = 1 << 20
	stripeFast := [2]int64{1000, 2000} // ns per transfer: stripe, single
	first := gateRun(&g, gateEpochLen+gateProbeLen, size, stripeFast, &now)
	if n := countWay(first[:gateEpochLen], waySingle); n != gateEpochLen || g.probes != 1 {
		t.Fatalf("%d of the first %d transfers on one rail, %d probes", n, gateEpochLen, g.probes)
	}
	if n := countWay(first[gateEpochLen:], wayStripe); n != gateProbeLen || g.best != wayStripe || g.won {
		t.Fatalf("probe: %d of %d striped; best %v won %v: a decisive probe did not switch", n, gateProbeLen, g.best, g.won)
	}
	// probes of one rail: gateProbeLen transfers each, growing rarer
	// (after 2, 4 ... 64, 64 ... epochs)
	p := g.probes
	ways := gateRun(&g, 300*gateEpochLen, size, stripeFast, &now)
	if g.best != wayStripe {
		t.Fatalf("best %v rates %v: switched to one rail although striping is twice as fast", g.best, g.rate)
	}
	if n := countWay(ways, waySingle) / gateProbeLen; n != int(g.probes-p) || n < 6 || n > 11 {
		t.Fatalf("%d probes (%d counted) in %d transfers", n, g.probes-p, len(ways))
	}
	// one rail becomes faster: the next probe switches
	singleFast := [2]int64{2000, 1000}
	ways = gateRun(&g, (gateProbeMax+4)*gateEpochLen, size, singleFast, &now)
	if g.best != waySingle {
		t.Fatalf("still striping after %d transfers with one rail twice as fast", len(ways))
	}
	// and back: striping faster again, found at the next probe
	gateRun(&g, (gateProbeMax+4)*gateEpochLen, size, stripeFast, &now)
	if g.best != wayStripe {
		t.Fatal("not striping again although striping became twice as fast")
	}
	// striping faster by less than the margin: one rail, which costs
	// less, and it stays there
	near := [2]int64{1000, 1000 * (1 + gateMargin/2)}
	gateRun(&g, (gateProbeMax+4)*gateEpochLen, size, near, &now)
	if g.best != waySingle {
		t.Fatalf("still striping although it moves only %v more", gateMargin/2)
	}
	sw := g.probes
	gateRun(&g, 4*gateProbeMax*gateEpochLen, size, near, &now)
	if g.best != waySingle || g.probes == sw {
		t.Fatalf("best %v after %d more probes: a rate within the margin switched back", g.best, g.probes-sw)
	}
}

// A probe that wins, but not decisively, is confirmed by a second one
// before the way switches: a win followed by a loss switches nothing.
func TestRailGateConfirm(t *testing.T) {
	var g railGate
	g.reset()
	var now int64
	const size = 1 << 20
	even := [2]int64{1000, 1000}
	gateRun(&g, gateEpochLen, size, even, &now)
	if !g.probing {
		t.Fatal("no probe after the first epoch")
	}
	gateRun(&g, gateProbeLen, size, [2]int64{700, 1000}, &now) // striping 1.4 times as fast, once
	if g.best != waySingle || !g.won || g.epochs != 1 {
		t.Fatalf("after a winning probe: best %v won %v epochs %d, want a confirming probe next", g.best, g.won, g.epochs)
	}
	gateRun(&g, gateEpochLen+gateProbeLen, size, even, &now)
	if g.best != waySingle || g.won || g.probes != 2 {
		t.Fatalf("after a losing confirmation: best %v won %v probes %d", g.best, g.won, g.probes)
	}
	gateRun(&g, 2*gateEpochLen+gateProbeLen, size, [2]int64{700, 1000}, &now)
	gateRun(&g, gateEpochLen+gateProbeLen, size, [2]int64{700, 1000}, &now)
	if g.best != wayStripe || g.probes != 4 {
		t.Fatalf("after a confirmed win: best %v probes %d", g.best, g.probes)
	}
}

// The typical rate of the chosen way is the median of its last three
// epochs: one slow epoch does not move it.
func TestRailGateTypical(t *testing.T) {
	var g railGate
	for i, c := range []struct {
		rate, want float64
	}{{100, 100}, {200, 150}, {120, 120}, {10, 120}, {130, 120}, {140, 130}} {
		g.hist[g.hn%len(g.hist)] = c.rate
		g.hn++
		if got := g.typical(); got != c.want {
			t.Fatalf("epoch %d (%v): typical %v, want %v", i, c.rate, got, c.want)
		}
	}
}

// A probe's transfers wait until the chosen way's transfers in flight
// have drained, the transfers started after them until the probe's have
// completed; the probe's rate runs from the drain, and completions of
// an older generation do not count in it.
func TestRailGateProbeHolds(t *testing.T) {
	var g railGate
	g.reset()
	var now int64
	const size = 1 << 20
	// four in flight at the end of the first epoch
	var old []uint32 // their generations
	for i := 0; i < 4; i++ {
		_, gen, _ := g.start(now)
		old = append(old, gen)
	}
	gateRun(&g, gateEpochLen-3, size, [2]int64{1000, 1000}, &now)
	for _, gen := range old[:3] {
		now += 1000
		g.done(gen, g.era, size, now)
	}
	if !g.probing {
		t.Fatal("no probe after the first epoch")
	}
	var probe []uint32
	for i := 0; i < gateProbeLen; i++ {
		way, gen, hold := g.start(now)
		if !hold || way != wayStripe || gen != g.gen {
			t.Fatalf("probe transfer %d with one in flight: way %v gen %d hold %v", i, way, gen, hold)
		}
		probe = append(probe, gen)
	}
	if way, gen, hold := g.start(now); !hold || way != waySingle || gen != 0 {
		t.Fatalf("a transfer after the probe's: way %v gen %d hold %v", way, gen, hold)
	}
	// the last old one completes much later: the drain releases the
	// probe, whose clock starts there
	now += 1e6
	if _, rel := g.done(old[3], g.era, size, now); !rel || g.t1 != now {
		t.Fatalf("drained: released %v t1 %d now %d", rel, g.t1, now)
	}
	for range probe {
		g.live++ // gateHeld releases them
	}
	if sw, rel := g.done(probe[0]-1, g.era, size, now); sw || rel || g.n != 0 {
		t.Fatal("an old generation's completion counted in the probe")
	}
	g.live++ // undo the old completion's count
	for i, gen := range probe {
		now += 1000 // as fast as striping: the probe runs to its end
		_, rel := g.done(gen, g.era, size, now)
		if rel != (i == len(probe)-1) {
			t.Fatalf("completion %d of the probe: released %v", i, rel)
		}
	}
	if g.rate[wayStripe] < 0.9e12 || g.rate[wayStripe] > 1.1e12 {
		t.Fatalf("probe rate %v B/s, want about 1 MiB per µs: the drain counted in it", g.rate[wayStripe])
	}
	if way, gen, hold := g.start(now); hold || way != waySingle || gen == probe[0] {
		t.Fatalf("after the probe: way %v gen %d hold %v", way, gen, hold)
	}
}

// gateWorld is railsWorld over two rails with the rma child; it
// returns the rails and the endpoint's lane on each.
func gateWorld(t *testing.T) (*node, *netns.Rails, []int) {
	rails, err := netns.NewRails(t, 2)
	if err != nil {
		t.Fatal(err)
	}
	nd := railsWorldOn(t, rails, "rma", Config{})
	ep := nd.eps[1]
	if len(ep.rails) != 2 {
		t.Fatalf("rails %v, want 2", ep.rails)
	}
	laneOf := make([]int, len(rails.A))
	for i := range laneOf {
		laneOf[i] = -1
		for li := range ep.lanes {
			if ep.lanes[li].wi.attr.Device == rails.A[i].Link() {
				laneOf[i] = li
			}
		}
		if laneOf[i] < 0 {
			t.Fatalf("no lane on %s", rails.A[i].Link())
		}
	}
	return nd, rails, laneOf
}

// limitRail limits both ends of rail i to mbit.
func limitRail(t *testing.T, rails *netns.Rails, i, mbit int) {
	for _, ns := range []*netns.NS{rails.A[i], rails.B[i]} {
		if err := ns.SetRate(mbit); err != nil {
			t.Skipf("tc: %v", err)
		}
	}
}

// gatePutSize is the size of gateStream's Puts: 8 of them fill the rma
// role's 1 MiB region.
const gatePutSize = 128 << 10

// gateStream puts gatePutSize buffers to the peer's registered memory, 8
// in flight, until done reports true or n were put; it returns how many.
func gateStream(t *testing.T, nd *node, reg remoteMem, n int, done func() bool) int {
	ep := nd.eps[1]
	buf := pattern(gatePutSize, 9)
	var win [8]*Request
	i := 0
	for ; i < n && !done(); i++ {
		k := i % len(win)
		if win[k] != nil {
			nd.must(nd.wait(win[k]))
			win[k].Release()
		}
		// each slot of the window has its own place in the peer's
		// region: Puts in flight together may go on different rails
		win[k] = ep.Put(buf, reg.addr+uint64(k*gatePutSize), reg.key, nil)
	}
	for _, r := range win {
		if r != nil {
			nd.must(nd.wait(r))
			r.Release()
		}
	}
	return i
}

// getGateBack reads back a slot gateStream put and checks its content.
func getGateBack(t *testing.T, nd *node, reg remoteMem) {
	t.Helper()
	back := make([]byte, gatePutSize)
	nd.must(nd.wait(nd.eps[1].Get(back, reg.addr+gatePutSize, reg.key, nil)))
	if !bytes.Equal(back, pattern(gatePutSize, 9)) {
		t.Fatal("get back: content differs")
	}
}

// Two rails at 100 Mbit/s (tc): the gate stripes. Then the rail that is
// not the RMA lane's drops to 10 Mbit/s: striping holds every transfer
// back to the slow rail, so the gate's next probe finds the RMA lane
// alone faster and the transfers after it leave the slow rail alone.
// The data still arrives intact.
func TestRailsGateSlowRail(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector the CPU, not the rails, limits both ways")
	}
	nd, rails, laneOf := gateWorld(t)
	ep := nd.eps[1]
	slow := ep.rails[1]
	limitRail(t, rails, 0, 100)
	limitRail(t, rails, 1, 100)
	keys := recvKeys(t, nd, 1)
	reg := keys[0]
	deadline := time.Now().Add(40 * time.Second) // within the child's minute
	striping := func() bool {
		st := nd.w.Stats().Rails
		return st.Switches > 0 && ep.gate.best == wayStripe || time.Now().After(deadline)
	}
	n := gateStream(t, nd, reg, 2000, striping)
	st := nd.w.Stats().Rails
	t.Logf("equal rails, %d puts: %+v", n, st)
	if ep.gate.best != wayStripe {
		t.Fatalf("not striping over two equal rails at 100 Mbit/s after %d puts: %+v", n, st)
	}
	for i, li := range laneOf {
		if li == slow {
			limitRail(t, rails, i, 10)
		}
	}
	single := func() bool {
		return ep.gate.best == waySingle || time.Now().After(deadline)
	}
	n = gateStream(t, nd, reg, 2000, single)
	st = nd.w.Stats().Rails
	t.Logf("one rail at 10 Mbit/s, %d puts: %+v", n, st)
	if ep.gate.best != waySingle {
		t.Fatalf("still striping over a rail at 10 Mbit/s after %d puts: %+v", n, st)
	}
	// the next puts go on the RMA lane alone (striped chunks are
	// counted per lane, a transfer on one lane in Rails.Single)
	before := laneChunks(ep)
	gateStream(t, nd, reg, gateEpochLen, func() bool { return false })
	after, st2 := laneChunks(ep), nd.w.Stats().Rails
	if after[slow] != before[slow] || st2.Single-st.Single != gateEpochLen {
		t.Fatalf("striped chunks per lane %v -> %v, transfers on one rail %d -> %d: the slow lane %d still carries transfers",
			before, after, st.Single, st2.Single, slow)
	}
	getGateBack(t, nd, reg)
	nd.quit(1)
	nd.exitOK(1)
}

// Two rails both limited to 100 Mbit/s (NICs of a fixed speed): the
// gate's first probe finds striping twice as fast and switches to it;
// later probes of one rail move half as much, so it keeps striping, and
// the transfers the probes held go on.
func TestRailsGateEqualRails(t *testing.T) {
	nd, rails, _ := gateWorld(t)
	ep := nd.eps[1]
	limitRail(t, rails, 0, 100)
	limitRail(t, rails, 1, 100)
	keys := recvKeys(t, nd, 1)
	reg := keys[0]
	deadline := time.Now().Add(60 * time.Second)
	// the probe of striping after the first epoch, then two of one rail
	probed := func() bool { return nd.w.Stats().Rails.Probes >= 3 || time.Now().After(deadline) }
	n := gateStream(t, nd, reg, 4000, probed)
	st := nd.w.Stats().Rails
	t.Logf("%d puts: %+v", n, st)
	if st.Probes < 3 {
		t.Fatalf("%d probes after %d puts", st.Probes, n)
	}
	if st.Switches != 1 || ep.gate.best != wayStripe {
		t.Fatalf("way %v after %+v: want one switch, to striping over two equal rate-limited rails", ep.gate.best, st)
	}
	before := laneChunks(ep)
	gateStream(t, nd, reg, gateEpochLen, func() bool { return false })
	if after := laneChunks(ep); !chunksGrew(before, after) {
		t.Fatalf("chunks per lane %v -> %v: not striped", before, after)
	}
	nd.quit(1)
	nd.exitOK(1)
}

// UCGO_STRIPE_ALWAYS sets Config.StripeAlways; a bad value is an error.
func TestEnvStripeAlways(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "false": false, "": false} {
		ctx, err := newContext(Config{Transports: builtinTransports()[:1]}, func(k string) string {
			if k == EnvStripeAlways {
				return v
			}
			return ""
		})
		if err != nil {
			t.Fatalf("%s=%q: %v", EnvStripeAlways, v, err)
		}
		if got := ctx.Config().StripeAlways; got != want {
			t.Errorf("%s=%q: StripeAlways %v, want %v", EnvStripeAlways, v, got, want)
		}
		ctx.Close()
	}
	_, err := newContext(Config{}, func(k string) string {
		if k == EnvStripeAlways {
			return "maybe"
		}
		return ""
	})
	if !errors.Is(err, uct.ErrInvalidParam) {
		t.Fatalf("%s=maybe: %v, want %v", EnvStripeAlways, err, uct.ErrInvalidParam)
	}
}

// Two rails at 100 Mbit/s with failover on: while the gate probes one
// rail (transfers held for the drain or for the probe's end), the RMA
// lane's rail goes down. The transfers move to the other rail, the held
// ones go on, every Put completes and the data arrive intact.
func TestRailsGateRailDown(t *testing.T) {
	t.Setenv(epTimeoutEnv, "2s")
	rails, err := netns.NewRails(t, 2)
	if err != nil {
		t.Fatal(err)
	}
	limitRail(t, rails, 0, 100)
	limitRail(t, rails, 1, 100)
	cfg := Config{Failover: failover.DefaultPolicy()}
	cfg.Failover.Mode = failover.AnyTransport
	nd := railsWorldOn(t, rails, "rma", cfg, EnvErrMode+"=peer", EnvFailover+"=any")
	ep := nd.eps[1]
	if len(ep.rails) != 2 {
		t.Fatalf("rails %v, want 2", ep.rails)
	}
	down := -1
	for i := range rails.A {
		for li := range ep.lanes {
			if li == ep.rails[0] && ep.lanes[li].wi.attr.Device == rails.A[i].Link() {
				down = i
			}
		}
	}
	if down < 0 {
		t.Fatal("no rail carries the RMA lane")
	}
	reg := recvKeys(t, nd, 1)[0]
	deadline := time.Now().Add(40 * time.Second)
	probing := func() bool {
		if nd.w.Stats().Rails.Switches > 0 && ep.gate.best == wayStripe && ep.gate.probing {
			return true
		}
		if time.Now().After(deadline) {
			t.Fatalf("no probe of one rail while striping: %+v", nd.w.Stats().Rails)
		}
		return false
	}
	n := gateStream(t, nd, reg, 4000, func() bool {
		if !probing() {
			return false
		}
		if err := rails.A[down].SetLink(false); err != nil {
			t.Fatal(err)
		}
		return true
	})
	st := nd.w.Stats()
	t.Logf("rail %d down during a probe after %d puts: %+v", down, n, st.Rails)
	// gateStream fails the test if a Put fails
	gateStream(t, nd, reg, 2*gateEpochLen, func() bool { return false })
	if st2 := nd.w.Stats(); st2.FailedOver == 0 || ep.Err() != nil {
		t.Fatalf("failed over %d times, endpoint error %v", st2.FailedOver, ep.Err())
	}
	if !ep.stalled.empty() {
		t.Fatal("transfers still held after the failover")
	}
	getGateBack(t, nd, reg)
	nd.quit(1)
	nd.exitOK(1)
}
