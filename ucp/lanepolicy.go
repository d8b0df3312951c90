package ucp

import "github.com/ucgo/ucgo/failover"

// policyAllows says whether the failover policy lets ep's traffic use
// lane i (pickLanes). Under failover.SameTransport traffic never changes
// transport: only lanes of the transport of the endpoint's first lane
// (the one it prefers: shm between workers of one host, else the first
// network lane) may carry it, so traffic from a failed shm lane does not
// move to rc, and from rc only to another rc lane; with no such lane
// left the endpoint fails. Off and AnyTransport allow every lane.
func (ep *Endpoint) policyAllows(i int) bool {
	if ep.w.cfg.Failover.Mode != failover.SameTransport || len(ep.lanes) == 0 {
		return true
	}
	return ep.lanes[i].attr.Transport == ep.lanes[0].attr.Transport
}
