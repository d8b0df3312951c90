package ucp

import "github.com/ucgo/ucgo/uct"

// LaneChoice is a lane that Connect would open towards a peer.
type LaneChoice struct {
	// Transport and Device name our iface; Attr is its attributes.
	Transport, Device string
	Attr              uct.IfaceAttr
	// Fallback lanes are network lanes that Connect opens only when no
	// shared-memory lane to a peer on the same host could be connected.
	Fallback bool
	// Standby lanes are network lanes that Connect opens beside
	// shared-memory ones with failover to any transport; they carry
	// traffic only when no shared-memory lane is healthy.
	Standby bool
	// Alternative lanes are tried only if the ones before them failed to
	// connect: none of the peer's network ifaces is known to be reachable
	// (in a subnet of ours), so Connect opens the first pair that
	// connects.
	Alternative bool
}

// LanesTo returns the lanes Connect would open towards the worker at the
// packed address addr, in Connect's order and by its rule (see
// connectLanes), without connecting: shared-memory lanes when both
// workers run on the same host, then network lanes, one per reachable
// pair of devices (as fallbacks when there are shared-memory ones, or
// standing by beside them with failover to any transport), each for a
// transport both workers have.
func (w *Worker) LanesTo(addr []byte) ([]LaneChoice, error) {
	a, err := UnpackAddress(addr)
	if err != nil {
		return nil, opErr("lanes", "", err)
	}
	w.lock()
	defer w.unlock()
	shmc, netc, first := w.laneCands(a)
	var out []LaneChoice
	for _, c := range shmc {
		out = append(out, LaneChoice{Transport: c.wi.attr.Transport, Device: c.wi.attr.Device, Attr: c.wi.attr})
	}
	after := len(out) > 0
	for i, c := range netc {
		out = append(out, LaneChoice{Transport: c.wi.attr.Transport, Device: c.wi.attr.Device, Attr: c.wi.attr,
			Fallback: after && !w.standbyLanes(), Standby: after && w.standbyLanes(), Alternative: first && i > 0})
	}
	return out, nil
}
