package ucp

import (
	"net/netip"
	"strconv"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/uct"
)

// The lane set of an endpoint. A peer's address lists its ifaces, one
// per transport and, for rc, one per netdev (Config.NetDevices). Connect
// opens:
//
//   - shared-memory lanes when both workers run on the same host (and
//     boot);
//   - network lanes otherwise, or when no shared-memory lane could be
//     connected: one per reachable pair of our iface and the peer's iface
//     of the same transport. An rc pair is reachable when the peer's
//     address lies in an IPv4 subnet of our iface's netdev; pairs that
//     cannot reach each other are not tried. When no pair is known to be
//     reachable (a routed network, or a transport whose addresses say
//     nothing of it), the pairs are tried in order and the first that
//     connects is the one lane. With failover on, the rails connect
//     together, and a rail that does not answer within a grace after the
//     first lane joins as a failed lane its probes finish (connectRails);
//   - with failover to any transport (Config.Failover.Mode AnyTransport),
//     on one host, the network lanes as well, as standby lanes: pickLanes
//     leaves them idle while a shared-memory lane is healthy.

// ifaceRail is what the lane set knows of one of the worker's ifaces.
type ifaceRail struct {
	// subnets are the IPv4 subnets of an rc iface's netdev that hold its
	// address (netdevs.go).
	subnets []netip.Prefix
	// ord is the iface's ordinal among the worker's ifaces of its
	// transport (the worker address lists them in this order): it names
	// the iface's memory domain in key bundles (mdPartName).
	ord int
	// linkDown: the device's last status was not usable (linkwatch.go).
	linkDown bool
}

// laneInfo is what the lane set keeps per lane.
type laneInfo struct {
	raddr   []byte // the peer iface's address
	ridx    int    // its index in the peer's worker address
	rord    int    // its ordinal among the peer's ifaces of its transport
	standby bool   // a network lane kept idle beside a shared-memory one

	bindSent bool // carried our lane-bind (lanebind_token.go)

	// nicDown says the lane failed because our device (local) or the
	// peer's (remote, as the peer told) went down; it is rebuilt when the
	// device comes back (linkwatch.go).
	nicDown, rnicDown bool

	chunks uint64 // chunks of striped transfers posted on the lane (stripe.go)
	wholes uint64 // transfers the lane took whole as a rail (stripe_load.go)
	xbytes int    // bytes of the endpoint's transfers in flight on the lane as a rail (stripe_load.go)
}

// railIface fills wi's ifaceRail before wi joins w.ifaces (NewWorker, in
// the network namespace the iface lives in).
func (w *Worker) railIface(wi *wiface) {
	for _, o := range w.ifaces {
		if o.md.comp.Name() == wi.md.comp.Name() {
			wi.ord++
		}
	}
	wi.subnets = ifaceSubnets(wi)
}

// mdPartName names a memory domain's part in a key bundle (rma.go): the
// transport for the first iface of a transport, which is all a worker with
// one netdev has, "transport#ord" for the others.
func mdPartName(transport string, ord int) string {
	if ord == 0 {
		return transport
	}
	return transport + "#" + strconv.Itoa(ord)
}

// laneCand is a lane Connect may open: our iface and the peer's.
type laneCand struct {
	wi    *wiface
	ia    IfaceAddress
	ridx  int
	rord  int
	local bool // shared memory
}

// laneCands returns the candidate lanes to a: shared-memory ones (when a
// is on our host) and network ones; first says the network candidates
// are alternatives, of which only the first that connects is opened.
func (w *Worker) laneCands(a Address) (shmc, netc []laneCand, first bool) {
	ords := map[string]int{}
	var unknown []laneCand
	for ridx, ia := range a.Ifaces {
		rord := ords[ia.Transport]
		ords[ia.Transport]++
		for _, wi := range w.ifaces {
			if wi.md.comp.Name() != ia.Transport {
				continue
			}
			c := laneCand{wi: wi, ia: ia, ridx: ridx, rord: rord, local: wi.attr.Cap.Has(uct.CapSharedMemory)}
			if c.local {
				if a.Host == w.ctx.host {
					shmc = append(shmc, c)
				}
				continue
			}
			switch wi.reaches(ia) {
			case reachYes:
				netc = append(netc, c)
			default:
				unknown = append(unknown, c)
			}
		}
	}
	if len(netc) == 0 && len(unknown) > 0 {
		// nothing known to be reachable: try the pairs in order, as a
		// worker with one iface per transport always did
		return shmc, unknown, len(unknown) > 1
	}
	return shmc, netc, false
}

// standbyLanes says whether network lanes are opened beside shared-memory
// ones, standing by.
func (w *Worker) standbyLanes() bool {
	return w.cfg.Failover.Mode == failover.AnyTransport
}

// connectLane connects ep's lane for c (lock held).
func (w *Worker) connectLane(ep *Endpoint, c laneCand, p EPParams, standby bool) error {
	uep, err := c.wi.it.Connect(c.ia.Addr, uct.EPParams{Timeout: p.Timeout})
	if err != nil {
		return err
	}
	ep.heardFold() // the lanes change
	ep.lanes = append(ep.lanes, lane{ep: uep, wi: c.wi, attr: c.wi.attr,
		laneInfo: laneInfo{raddr: c.ia.Addr, ridx: c.ridx, rord: c.rord, standby: standby}})
	if !standby {
		c.wi.use()
	}
	return nil
}

// pickStandby makes lane choice skip standby lanes while a lane that is
// not standing by can take the role: it reports whether lane i may be
// chosen for a role that lanes ok accept.
func (ep *Endpoint) pickStandby(i int, ok func(*lane) bool) bool {
	if !ep.lanes[i].standby {
		return true
	}
	for j := range ep.lanes {
		if ln := &ep.lanes[j]; !ln.standby && ln.failed == nil && ok(ln) {
			return false
		}
	}
	return true
}

// lanesPicked marks the ifaces of the chosen lanes as carrying traffic:
// a standby lane that takes over is polled on every Progress from then
// on.
func (ep *Endpoint) lanesPicked() {
	for _, i := range []int{ep.amLane, ep.rmaLane} {
		if i >= 0 && ep.lanes[i].standby {
			ep.lanes[i].wi.use()
		}
	}
	ep.pickRails()
}

func isAMLane(ln *lane) bool  { return ln.attr.Cap.Has(uct.CapAMBcopy) }
func isRMALane(ln *lane) bool { return ln.attr.Cap.Has(uct.CapGetZcopy | uct.CapPutZcopy) }

// registerOnRails registers m's memory, allocated from md, with the
// memory domains of the worker's other ifaces when lanes other than md's
// may reach it: the worker has several ifaces of one transport (rails) or
// keeps standby lanes.
func (w *Worker) registerOnRails(m *Mem, md *mdEntry) error {
	rails := w.standbyLanes()
	for _, wi := range w.ifaces {
		rails = rails || wi.ord > 0
	}
	if !rails {
		return nil
	}
	for _, wi := range w.ifaces {
		if wi.md == md || !wi.md.attr.CanRegister {
			continue
		}
		um, err := wi.md.md.Register(m.buf, uct.AccessAll)
		if err != nil {
			return err
		}
		m.parts = append(m.parts, memPart{mdPartName(wi.md.comp.Name(), wi.ord), um})
	}
	return nil
}
