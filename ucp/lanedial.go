package ucp

import "github.com/ucgo/ucgo/uct"

// Lanes are connected again from inside Progress: a failed lane is dialled
// for its probes (reconnectProbe), and a lane whose device came back is
// rebuilt (rebuildLane). On an iface that can start a connection in the
// background (uct.ConnectStarter, rc), laneConnect starts it and returns
// uct.ErrInProgress; the next call for the same lane finishes it once the
// peer answered. So a peer or path that does not answer holds up only
// that lane, never the worker: connecting through a black hole would
// otherwise wait in Progress for the endpoint's whole timeout. Other
// ifaces (shm) connect at once.

// laneConnect connects lane li of ep to its peer iface again, or goes on
// with the connection it started before (lock held, transports ours).
func (w *Worker) laneConnect(ep *Endpoint, li int) (uct.Endpoint, error) {
	ln := &ep.lanes[li]
	if ln.prb.dial == nil {
		cs, ok := ln.wi.it.(uct.ConnectStarter)
		if !ok {
			return ln.wi.it.Connect(ln.raddr, uct.EPParams{Timeout: ep.params.Timeout})
		}
		c, err := cs.StartConnect(ln.raddr, uct.EPParams{Timeout: ep.params.Timeout})
		if err != nil {
			return nil, err
		}
		ln.prb.dial = c
	}
	uep, err := ln.prb.dial.Finish()
	if err == uct.ErrInProgress {
		return nil, err
	}
	ln.prb.dial = nil
	return uep, err
}

// cancelDial abandons lane ln's connection in progress, if any (lock
// held). Without the transports (a thread-safe worker whose transport
// lock another goroutine holds) it is left to the iface, whose Close
// cancels it.
func (w *Worker) cancelDial(ln *lane) {
	if ln.prb.dial != nil && w.canPost() {
		ln.prb.dial.Cancel()
		ln.prb.dial, ln.prb.rebuilding = nil, false
	}
}
