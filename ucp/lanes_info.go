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
}

// LanesTo returns the lanes Connect would open towards the worker at the
// packed address addr, in Connect's order and by its rule (see
// connectLanes), without connecting: shared-memory lanes when both
// workers run on the same host, then network lanes (as fallbacks when
// there are shared-memory ones), each for a transport both workers have.
func (w *Worker) LanesTo(addr []byte) ([]LaneChoice, error) {
	a, err := UnpackAddress(addr)
	if err != nil {
		return nil, opErr("lanes", "", err)
	}
	w.lock()
	defer w.unlock()
	var out []LaneChoice
	for _, local := range []bool{true, false} {
		fallback := len(out) > 0
		for _, ia := range a.Ifaces {
			for _, wi := range w.ifaces {
				if wi.md.comp.Name() != ia.Transport || wi.attr.Cap.Has(uct.CapSharedMemory) != local {
					continue
				}
				if local && a.Host != w.ctx.host {
					continue
				}
				out = append(out, LaneChoice{Transport: wi.attr.Transport, Device: wi.attr.Device, Attr: wi.attr, Fallback: fallback})
			}
		}
	}
	return out, nil
}
