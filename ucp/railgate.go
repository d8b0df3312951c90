package ucp

import (
	"log/slog"
	"time"
)

// The rail gate. Striping over a second rail adds throughput only when
// the rails, not the hosts' CPUs, limit a transfer: rails of NICs of a
// fixed speed double it, and two queue pairs keep two windows of data
// moving where one QP's window limits (a loaded host); but rails that
// share one busy CPU (veth pairs on a small host) move no more together
// than one alone while costing more CPU per byte, and a rail much slower
// than the other holds every striped transfer back to its speed. So an
// endpoint with rails measures, rather than assumes, which is faster:
// the completion rate of its transfers striped and of those on the RMA
// lane alone, and stripes only while striping moves clearly more
// (gateMargin) than one rail: when the two are close, one rail costs
// less CPU and leaves the other rails to other traffic.
//
// A gate starts on one rail (gateFirst). Epochs of the chosen way last
// gateEpochLen completions; its figure is the median of its last three
// epochs, so that one epoch that the host's load slowed does not hand
// the choice to a probe. After the first epoch, and then every `every`
// epochs, a probe starts gateProbeLen transfers the other way. The
// probe's transfers wait until the chosen way's transfers in flight
// have drained, and the transfers started after them wait (on the
// endpoint's stalled list, before anything posted later) until the
// probe's have completed: so the probe's rate is that of the other way
// alone, timed from the drain to its last completion, and its cost is
// bounded by gateProbeLen transfers. A probe runs to its end: transfers
// that move side by side complete close together, so a part of it
// tells nothing. A probe that wins by less than gateDecisive is
// confirmed by a second probe one epoch later before the way switches,
// so that one probe that a busy host's scheduling favoured does not
// move the traffic. The gap between probes doubles, up to gateProbeMax
// epochs, while the chosen way keeps winning, and falls back to
// gateProbeMin after a switch.
//
// A rate is bytes per second of busy time: less the time when the
// endpoint had no transfer of stripeMin bytes or more in flight (a
// program that pauses between bursts does not make the way it paused
// on look slow). Each transfer striping could take (stripeMin bytes or
// more, on an endpoint with rails) carries the generation of the
// measurement it was started in; completions of older generations do
// not count, so the transfers still in flight from before a probe or a
// switch do not mix with the new figure. Lanes chosen again (pickRails:
// a failover, a lane restored) start the gate over, and transfers held
// by a probe of the old gate go on.
//
// Config.StripeAlways (UCGO_STRIPE_ALWAYS) turns the gate off: every
// transfer striping can take is striped.
//
// WorkerStats.Rails counts the transfers each way, the probes and the
// switches; a switch is logged (debug) with both rates.

const (
	gateEpochLen = 16 // completions of an epoch of the chosen way
	gateProbeLen = 8  // transfers of a probe
	gateProbeMin = 2  // epochs between probes after a switch
	gateProbeMax = 64 // epochs between probes at most
	// gateMargin: striping is chosen only while its rate beats one
	// rail's by this fraction, so that noise does not flip the choice
	// and a tie goes to the way that costs less.
	gateMargin = 0.10
	// gateDecisive: a probe that moves this many times the chosen way's
	// rate switches without a confirming probe.
	gateDecisive = 1.5
	// gateFirst is the way a gate starts with.
	gateFirst = waySingle
)

// gateWay is how a transfer moves: striped over the rails or on the
// RMA lane alone.
type gateWay uint8

const (
	wayStripe gateWay = iota
	waySingle
)

func (w gateWay) other() gateWay { return 1 - w }

func (w gateWay) String() string {
	if w == waySingle {
		return "single"
	}
	return "stripe"
}

// RailStats counts what the rail gate decided for the transfers of
// endpoints with rails (stripe.go, railgate.go).
type RailStats struct {
	// Striped and Single count transfers of stripeMin bytes or more
	// started striped over the rails or on one rail.
	Striped, Single uint64
	// Probes counts the probes of the way not chosen; Switches the
	// probes that changed the way (a decisive win, or a win that a
	// second probe confirmed).
	Probes, Switches uint64
}

// railGate is an endpoint's choice between striping and one rail.
type railGate struct {
	best    gateWay    // the chosen way, outside probes
	probing bool       // the current generation measures best.other()
	gen     uint32     // the current generation; transfers carry it (0: none)
	era     uint32     // counts resets; transfers carry it while busy counts them
	started int        // transfers of a probe started
	n       int        // completions of the current epoch
	bytes   int64      // their bytes, after the first
	t1      int64      // time of the first (ns)
	busy    int        // transfers of this era started and not done
	live    int        // those of them not held
	idleAt  int64      // when busy last fell to 0 (ns; 0: busy)
	idle    int64      // ns of the current epoch with nothing in flight
	rate    [2]float64 // the chosen way's: the median of hist; the other's: its last probe
	hist    [3]float64 // the chosen way's last epochs' rates
	hn      int
	epochs  int  // epochs of best until the next probe
	every   int  // the gap between probes, in epochs
	won     bool // the last probe won; the next confirms it
	probes  uint64
}

// gateClock is the gate's time base.
var gateClock = time.Now()

func gateNow() int64 { return int64(time.Since(gateClock)) }

// reset starts the gate over on gateFirst, with a probe of the other
// way after the first epoch (pickRails; lock held).
func (g *railGate) reset() {
	gen, era, probes := g.gen+1, g.era+1, g.probes
	*g = railGate{best: gateFirst, gen: gen, era: era, epochs: 1, every: 1, probes: probes}
}

// start tells the way of a transfer that is starting at now: its way,
// the generation it counts in, and whether it waits (then it is counted
// live on its release, gateHeld): a probe's transfer for the chosen
// way's transfers in flight to drain, a later one for the probe to end.
func (g *railGate) start(now int64) (way gateWay, gen uint32, hold bool) {
	if g.gen == 0 {
		g.reset()
	}
	if g.busy == 0 && g.idleAt != 0 {
		if g.n > 0 || g.probing && g.t1 != 0 {
			g.idle += now - g.idleAt // a pause within the measurement
		}
		g.idleAt = 0
	}
	g.busy++
	if !g.probing {
		g.live++
		return g.best, g.gen, false
	}
	if g.started < gateProbeLen {
		g.started++
		if g.live > 0 {
			return g.best.other(), g.gen, true // until the drain
		}
		if g.t1 == 0 {
			g.t1 = now
		}
		g.live++
		return g.best.other(), g.gen, false
	}
	return g.best, 0, true
}

// prefers reports whether the gate's figures favour way o over its
// chosen way: striping only when it moves gateMargin more than one rail.
func (g *railGate) prefers(o gateWay) bool {
	if o == wayStripe {
		return g.rate[wayStripe] > g.rate[waySingle]*(1+gateMargin)
	}
	return g.rate[wayStripe] <= g.rate[waySingle]*(1+gateMargin)
}

// done counts a completed transfer of size bytes of generation gen and
// era era at now; it reports whether an epoch or probe ended that
// switched the way (switched) and whether held transfers may go on
// (released: the chosen way's transfers drained before a probe, or a
// probe ended).
func (g *railGate) done(gen, era uint32, size int, now int64) (switched, released bool) {
	if era == g.era && g.busy > 0 {
		if g.busy--; g.busy == 0 {
			g.idleAt = now
		}
		if g.live--; g.live == 0 && g.probing && g.t1 == 0 && g.started > 0 {
			g.t1, g.idle = now, 0 // drained: the probe's transfers go
			released = true
		}
	}
	if gen == 0 || gen != g.gen || era != g.era {
		return false, released
	}
	if g.probing {
		return g.probeDone(size, now)
	}
	if g.n++; g.n == 1 {
		g.t1, g.idle = now, 0
		return false, released
	}
	g.bytes += int64(size)
	if g.n < gateEpochLen {
		return false, released
	}
	rate := float64(g.bytes) / float64(max(now-g.t1-g.idle, 1)) * 1e9
	g.n, g.bytes, g.idle = 0, 0, 0
	g.hist[g.hn%len(g.hist)] = rate
	g.hn++
	g.rate[g.best] = g.typical()
	if g.epochs--; g.epochs <= 0 {
		// probe: the transfers started from now on wait for those
		// in flight to drain (done)
		g.probing, g.started, g.t1 = true, 0, 0
		g.gen++
		g.probes++
	}
	return false, released
}

// probeDone counts a completed transfer of the probe: its rate runs from
// the moment the probe's transfers went (the chosen way's drained, or
// the first started on an idle endpoint) to its last completion.
func (g *railGate) probeDone(size int, now int64) (switched, released bool) {
	g.n++
	g.bytes += int64(size)
	rate := float64(g.bytes) / float64(max(now-g.t1-g.idle, 1)) * 1e9
	if g.n < gateProbeLen {
		return false, false
	}
	g.n, g.bytes, g.idle, g.t1 = 0, 0, 0, 0
	o := g.best.other()
	g.rate[o] = rate
	g.probing = false
	g.gen++
	switch {
	case !g.prefers(o):
		g.won = false
		g.every = min(2*g.every, gateProbeMax)
		g.epochs = g.every
	case !g.won && g.rate[o] < gateDecisive*g.rate[g.best]:
		g.won = true
		g.epochs = 1 // confirm
	default:
		g.won = false
		g.best = o
		g.hist, g.hn = [3]float64{rate}, 1
		g.every = gateProbeMin
		g.epochs = g.every
		switched = true
	}
	return switched, true
}

// typical is the median of the chosen way's last epochs' rates (the mean
// of two while it has only two).
func (g *railGate) typical() float64 {
	h := g.hist
	switch min(g.hn, len(h)) {
	case 1:
		return h[0]
	case 2:
		return (h[0] + h[1]) / 2
	}
	return max(min(h[0], h[1]), min(max(h[0], h[1]), h[2]))
}

// gateStart asks ep's gate how transfer r starts and marks r with the
// answer; true: striped (lock held).
func (w *Worker) gateStart(r *Request, ep *Endpoint) bool {
	if w.cfg.StripeAlways {
		w.stats.Rails.Striped++
		return true
	}
	way, gen, hold := ep.gate.start(gateNow())
	r.gateGen, r.gateEra, r.gateHold = gen, ep.gate.era, hold
	if way == wayStripe {
		w.stats.Rails.Striped++
	} else {
		w.stats.Rails.Single++
	}
	return way == wayStripe
}

// gateHeld reports whether r, before its first chunk, waits: a probe's
// transfer for the drain, a later one for the probe to end. Once it may
// go it counts live in its endpoint's gate and, if it waited for the
// probe, in the current generation (lock held).
func (w *Worker) gateHeld(r *Request) bool {
	if !r.gateHold || r.xoff != 0 {
		return false
	}
	g := &r.ep.gate
	if r.gateEra != g.era {
		r.gateHold = false // the gate started over: r counts nowhere
		return false
	}
	probe := r.gateGen != 0
	if probe && g.probing && g.gen == r.gateGen && g.t1 == 0 || !probe && g.probing {
		return true
	}
	r.gateHold = false
	g.live++
	if !probe {
		r.gateGen = g.gen
	}
	return false
}

// holdChunks puts r, held by its endpoint's probe, on the endpoint's
// stalled list; the probe's end puts the endpoint on the backlog
// (gateDone; lock held).
func (w *Worker) holdChunks(r *Request) {
	ep := r.ep
	if r.list != &ep.stalled {
		if r.list != nil {
			r.list.remove(r)
		}
		ep.stalled.push(r)
	}
}

// gateDone counts r's transfer, which completed, in its endpoint's gate
// (lock held).
func (w *Worker) gateDone(r *Request) {
	gen, era := r.gateGen, r.gateEra
	r.gateGen, r.gateEra, r.gateHold = 0, 0, false
	ep := r.ep
	if era == 0 || ep == nil || len(r.xall) == 0 {
		return
	}
	g := &ep.gate
	p := g.probes
	switched, released := g.done(gen, era, len(r.xall), gateNow())
	w.stats.Rails.Probes += g.probes - p
	if switched {
		w.stats.Rails.Switches++
		slog.Debug("ucp: rails", "ep", ep.name, "way", g.best.String(),
			"stripe MB/s", g.rate[wayStripe]/1e6, "single MB/s", g.rate[waySingle]/1e6)
	}
	if released && !ep.stalled.empty() {
		w.toBacklog(ep)
	}
}
