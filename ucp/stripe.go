package ucp

import (
	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/uct"
)

// Multi-rail striping. An endpoint with two or more RMA lanes of equal
// capability (rails: the same transport and bandwidth, none standing by;
// in practice one rc lane per NIC pair) spreads the data of a rendezvous
// transfer, a Put or a Get over up to Config.MaxRndvRails of them (as
// UCX_MAX_RNDV_RAILS does): the buffer is cut into chunks of at most the
// rails' zcopy limit and at most an equal share per rail, and chunk j goes
// on rail j mod n. Each rail's chunks report into a completion of the
// rail's own, so a failed chunk names its lane (Request.xlane) for
// laneFault; the request finishes once every rail's chunks completed.
// While every rail is busy with the endpoint's transfers, a transfer
// goes whole on the least loaded rail instead (stripe_load.go).
//
// The keys must be valid on every rail: a rendezvous registration of an
// endpoint with rails (or with failover on and several lanes) is made with
// the memory domain of each of its RMA lanes and its key bundle carries
// every part (rcache.go), and the peer unpacks, for each of its rails, the
// part of the domain behind the iface that rail connects to. Put and Get
// take each rail's key from the RKey, which unpacks one per lane.
//
// Transfers below stripeMin, endpoints with one rail and
// Config.MaxRndvRails 1 take one lane, as without striping.

// EnvMaxRndvRails sets Config.MaxRndvRails.
const EnvMaxRndvRails = "UCGO_MAX_RNDV_RAILS"

// EnvStripeAlways sets Config.StripeAlways.
const EnvStripeAlways = "UCGO_STRIPE_ALWAYS"

// defaultMaxRndvRails is Config.MaxRndvRails' default.
const defaultMaxRndvRails = 2

// maxStripe bounds the rails of one transfer.
const maxStripe = 8

// stripeMin is the smallest transfer that is striped: below it the
// second rail's setup costs more than it saves.
const stripeMin = 64 << 10

// epRails is what an endpoint knows of its rails (set by pickLanes).
type epRails struct {
	rails []int // lanes a transfer is striped over, the RMA lane first; nil with fewer than two
	// regMore names (by iface index) the memory domains of the other RMA
	// lanes, with which rendezvous buffers are registered as well;
	// regWis are those ifaces.
	regMore uint32
	regWis  []*wiface
	gate    railGate // striping or one rail (railgate.go)
}

// stripe is a striped transfer in flight.
type stripe struct {
	r     *Request
	n     int
	chunk int
	lanes [maxStripe]int
	keys  [maxStripe]uct.RKey
	ukeys [maxStripe]*keyEntry // unpacked rendezvous keys to release
	comps [maxStripe]uct.Completion
	acct  [maxStripe]int // bytes counted in each rail's load (stripe_load.go)
}

// pickRails finds ep's rails and the domains rendezvous buffers are
// registered with (lock held; pickLanes).
func (ep *Endpoint) pickRails() {
	ep.rails, ep.regMore, ep.regWis = ep.rails[:0], 0, ep.regWis[:0]
	ep.gate.reset()
	if !ep.stalled.empty() {
		ep.w.toBacklog(ep) // transfers held by a probe go on
	}
	if ep.rmaLane < 0 {
		return
	}
	w := ep.w
	max := w.cfg.MaxRndvRails
	if max <= 0 {
		max = defaultMaxRndvRails
	}
	max = min(max, maxStripe)
	rl := &ep.lanes[ep.rmaLane]
	ep.rails = append(ep.rails, ep.rmaLane)
	for i := range ep.lanes {
		ln := &ep.lanes[i]
		if i == ep.rmaLane || ln.failed != nil || ln.ep == nil || !isRMALane(ln) {
			continue
		}
		if len(ep.rails) < max && !ln.standby && ln.attr.Transport == rl.attr.Transport && ln.attr.Bandwidth == rl.attr.Bandwidth &&
			ep.foLane(i).Health.Carries() {
			ep.rails = append(ep.rails, i)
		}
	}
	if len(ep.rails) < 2 {
		ep.rails = ep.rails[:0]
	}
	if len(ep.rails) < 2 && w.cfg.Failover.Mode == failover.Off {
		return
	}
	// register with every RMA lane's domain: the rails' for striping,
	// and with failover on every lane's, for a transfer resumed on
	// another lane
	for i := range ep.lanes {
		ln := &ep.lanes[i]
		if !isRMALane(ln) || ln.wi == rl.wi || !ln.wi.md.attr.CanRegister {
			continue
		}
		if bit := uint32(1) << w.ifaceIndex(ln.wi); ep.regMore&bit == 0 {
			ep.regMore |= bit
			ep.regWis = append(ep.regWis, ln.wi)
		}
	}
}

// registerMore registers e's buffer with ep's other RMA lanes' domains
// and adds their keys to e's bundle (lock held).
func (e *regEntry) registerMore(ep *Endpoint, wi *wiface, buf []byte, acc uct.Access) error {
	parts := []bundlePart{{mdPartName(wi.md.comp.Name(), wi.ord), e.mem.PackRKey()}}
	for _, o := range ep.regWis {
		m, err := o.md.md.Register(buf, acc)
		if err != nil {
			return err
		}
		e.more = append(e.more, m)
		parts = append(parts, bundlePart{mdPartName(o.md.comp.Name(), o.ord), m.PackRKey()})
	}
	e.bundle = packBundle(parts)
	return nil
}

// closeMems deregisters e's memory from every domain.
func (e *regEntry) closeMems() error {
	err := e.mem.Close()
	for _, m := range e.more {
		if err2 := m.Close(); err == nil {
			err = err2
		}
	}
	e.more = nil
	return err
}

// stripeRndv stripes the rendezvous data move of r (see rndvMove) over
// ep's rails, with the keys of the peer's bundle rkey; false leaves it to
// one lane (lock held).
func (w *Worker) stripeRndv(r *Request, ep *Endpoint, put bool, buf []byte, raddr uint64, rkey []byte) bool {
	if len(ep.rails) < 2 || len(buf) < stripeMin || !w.gateStart(r, ep) {
		return false
	}
	st := &stripe{r: r}
	for _, li := range ep.rails {
		k, err := ep.laneKeyRef(rkey, li)
		if err != nil {
			continue // the peer's buffer is not registered for this rail
		}
		st.lanes[st.n], st.keys[st.n], st.ukeys[st.n] = li, k.key, k
		st.n++
	}
	return w.startStripe(r, st, put, buf, raddr)
}

// stripeRMA stripes Put or Get r over ep's rails (lock held); false leaves
// it to one lane.
func (w *Worker) stripeRMA(r *Request, ep *Endpoint) bool {
	if len(ep.rails) < 2 || len(r.buf) < stripeMin || !w.gateStart(r, ep) {
		return false
	}
	st := &stripe{r: r}
	for _, li := range ep.rails {
		if li < len(r.rkey.keys) && r.rkey.keys[li] != nil {
			st.lanes[st.n], st.keys[st.n] = li, r.rkey.keys[li]
			st.n++
		}
	}
	return w.startStripe(r, st, r.kind == kPut, r.buf, r.raddr)
}

// startStripe starts the striped transfer st of r, if it has two rails
// with keys, or the whole transfer on one of them when every rail is
// busy (wholeRail); otherwise it releases st's keys and reports false
// (lock held).
func (w *Worker) startStripe(r *Request, st *stripe, put bool, buf []byte, raddr uint64) bool {
	if st.n < 2 {
		st.release()
		return false
	}
	ep := r.ep
	if k := ep.wholeRail(st, len(buf)); k >= 0 {
		w.takeWhole(r, st, k, put, buf, raddr)
		return true
	}
	st.chunk = (len(buf) + st.n - 1) / st.n
	for k := 0; k < st.n; k++ {
		st.chunk = min(st.chunk, w.chunkMax(&ep.lanes[st.lanes[k]], put))
		k := k
		st.comps[k] = uct.Completion{Count: 1, Func: func(c *uct.Completion) { w.railDone(st, k, c) }}
	}
	st.load(ep, len(buf))
	r.stripe = st
	r.xc = &r.comp // the rails' completions report into it
	r.xbuf, r.xoff, r.xraddr, r.xkey, r.xlane, r.xput = buf, 0, raddr, nil, st.lanes[0], put
	r.xall = buf // failover moves the whole transfer (replay.go)
	if st.ukeys[0] != nil {
		// the RMA lane's key of the peer's bundle, which failover
		// unpacks again for the lane it moves the transfer to
		r.ukey, st.ukeys[0] = st.ukeys[0], nil
	}
	r.comp.Count = 1 + int32(st.n)
	r.comp.Status = nil
	w.postChunks(r)
	return true
}

// postStripe posts the chunks of r's striped transfer from r.xoff on
// (lock held); see postChunks, whose rules it follows.
func (w *Worker) postStripe(r *Request) {
	ep, st := r.ep, r.stripe
	if r.xoff < len(r.xbuf) && r.comp.Status == nil && !w.canPost() {
		w.stallChunks(r, false)
		return
	}
	for r.xoff < len(r.xbuf) && r.comp.Status == nil {
		k := (r.xoff / st.chunk) % st.n
		li := st.lanes[k]
		ln := &ep.lanes[li]
		end := min(r.xoff+st.chunk, len(r.xbuf))
		r.iov[0] = r.xbuf[r.xoff:end]
		c := &st.comps[k]
		c.Count++
		var err error
		if ln.ep == nil {
			err = uct.ErrCanceled
		} else if r.xput {
			err = ln.ep.PutZcopy(r.iov[:], r.xraddr+uint64(r.xoff), st.keys[k], c)
		} else {
			err = ln.ep.GetZcopy(r.iov[:], r.xraddr+uint64(r.xoff), st.keys[k], c)
		}
		if err == uct.ErrInProgress {
			ln.chunks++
			r.xoff = end
			continue
		}
		c.Count--
		if retryLater(err) || err == uct.ErrBusy {
			w.stallChunks(r, true)
			return
		}
		if err != nil {
			r.comp.Status, r.xlane = err, li
			break
		}
		ln.chunks++
		r.xoff = end
	}
	r.xbuf, r.iov[0] = nil, nil
	if r.list != &ep.inflight {
		if r.list != nil {
			r.list.remove(r)
		}
		ep.inflight.push(r)
	}
	// every chunk is posted: drop each rail's own count, then r's
	for k := 0; k < st.n; k++ {
		c := &st.comps[k]
		if c.Count--; c.Count > 0 {
			continue
		}
		if c.Status != nil && r.comp.Status == nil {
			r.comp.Status, r.xlane = c.Status, st.lanes[k]
		}
		c.Status = nil
		r.comp.Count--
	}
	if r.comp.Count--; r.comp.Count > 0 {
		return // railDone finishes r
	}
	err := r.comp.Status
	r.comp.Status = nil
	w.finishChunks(r, err)
}

// stallChunks puts r, whose chunks the transports cannot take now, on its
// endpoint's stalled list (lock held).
func (w *Worker) stallChunks(r *Request, count bool) {
	ep := r.ep
	if r.list != &ep.stalled {
		if r.list != nil {
			r.list.remove(r)
		}
		ep.stalled.push(r)
		if count {
			w.chunkStalls++
		}
	}
	w.toBacklog(ep)
}

// railDone: every chunk posted on rail k of st has completed (uct
// completion, from a transport's progress). A failure names the rail's
// lane; r's own completion counts the rail done.
func (w *Worker) railDone(st *stripe, k int, c *uct.Completion) {
	err := c.Status
	c.Status = nil
	r := st.r
	if err != nil {
		w.lockCB()
		if r.comp.Status == nil && !r.isDone() {
			r.xlane = st.lanes[k]
		}
		w.unlockCB()
	}
	r.comp.Invoke(err)
}

// release drops st's unpacked keys (lock held).
func (st *stripe) release() {
	for k, e := range st.ukeys {
		if e != nil {
			e.c.put(e)
			st.ukeys[k] = nil
		}
	}
}

// stripeDone releases what r's striped transfer holds when r completes
// (lock held). The stripe itself stays with r: a zombie's chunks may
// still report into its completions.
func (w *Worker) stripeDone(r *Request) {
	r.stripe.release()
}

// usesLane reports whether r's transfer posts chunks on lane li.
func (r *Request) usesLane(li int) bool {
	if st := r.stripe; st != nil {
		for k := 0; k < st.n; k++ {
			if st.lanes[k] == li {
				return true
			}
		}
		return false
	}
	return r.xlane == li
}

// unstripe ends r's striping before its transfer starts again on one
// lane, every chunk of the striped one having reported (lock held).
func (w *Worker) unstripe(r *Request) {
	r.stripe.unload(r.ep)
	r.stripe.release()
	r.stripe = nil
}
