package ucp

import (
	"fmt"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// railGrace is how long connectRails waits for the other rails once one
// lane of the endpoint is connected.
const railGrace = time.Second

// connectRails connects ep's network lanes to the candidates cands at
// once (lock held; failover on, two or more rails). Each rail on an iface
// that starts connections in the background (uct.ConnectStarter) is
// started first, then all are waited for together: until every one has
// answered, or for railGrace after the first lane connected. A rail still
// waiting then joins the endpoint as a failed lane whose connection goes
// on: its probes finish it (reconnectProbe), and the lane comes up when
// they are answered. So a dead rail costs Connect, or the peer's Progress
// that answers our wireup, at most railGrace, not the endpoint's timeout.
// Lanes keep the candidates' order. It returns the connection errors.
func (w *Worker) connectRails(ep *Endpoint, cands []laneCand, p EPParams, standby bool) []error {
	var errs []error
	ep.heardFold() // the lanes change
	first := len(ep.lanes)
	dials := make([]uct.Connecting, len(cands))
	up := make([]bool, len(cands))
	pending := 0
	for i, c := range cands {
		ep.lanes = append(ep.lanes, lane{wi: c.wi, attr: c.wi.attr,
			laneInfo: laneInfo{raddr: c.ia.Addr, ridx: c.ridx, rord: c.rord, standby: standby}})
		ln := &ep.lanes[first+i]
		cs, ok := c.wi.it.(uct.ConnectStarter)
		if !ok {
			uep, err := c.wi.it.Connect(c.ia.Addr, uct.EPParams{Timeout: p.Timeout})
			if err != nil {
				errs = append(errs, err)
				continue
			}
			ln.ep, up[i] = uep, true
			continue
		}
		d, err := cs.StartConnect(c.ia.Addr, uct.EPParams{Timeout: p.Timeout})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		dials[i] = d
		pending++
	}
	var firstUp time.Time
	if first > 0 || pending < len(cands) && anyTrue(up) {
		firstUp = time.Now()
	}
	for pending > 0 && (firstUp.IsZero() || time.Since(firstUp) < railGrace) {
		for i, d := range dials {
			if d == nil {
				continue
			}
			uep, err := d.Finish()
			if err == uct.ErrInProgress {
				continue
			}
			dials[i] = nil
			pending--
			if err != nil {
				errs = append(errs, err)
				continue
			}
			ep.lanes[first+i].ep, up[i] = uep, true
			if firstUp.IsZero() {
				firstUp = time.Now()
			}
		}
		if pending > 0 {
			time.Sleep(50 * time.Microsecond)
		}
	}
	// keep the lanes that connected or still connect, in order
	lanes := ep.lanes[:first]
	now := time.Now()
	for i := range cands {
		ln := ep.lanes[first+i]
		switch {
		case up[i]:
		case dials[i] != nil:
			ln.failed = uct.NewOpError(ln.attr.Transport, "connect", ep.name, uct.ErrTimedOut,
				fmt.Errorf("no answer within %v of the first lane; the lane's probes finish its connection", railGrace))
			ln.prb.dial, ln.prb.dialed = dials[i], now
		default:
			continue
		}
		if !standby {
			ln.wi.use()
		}
		lanes = append(lanes, ln)
	}
	ep.lanes = lanes
	return errs
}

func anyTrue(bs []bool) bool {
	for _, b := range bs {
		if b {
			return true
		}
	}
	return false
}
