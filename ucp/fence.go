package ucp

import "github.com/ucgo/ucgo/uct"

// Fencing a failed lane. A write posted on a lane that fails may still
// be on its way: in the peer's receive queue, or retransmitted by the
// requester, so that the peer's end of the lane applies it later, after
// the transfer was posted again on another lane and even after the
// peer was told that the transfer completed. Both ends therefore close
// their end of the failed lane (its QP moves to the error state, where it
// applies no packet) before the failover goes on:
//
//   - a side sends its sync, or its answer to the peer's, only once the
//     uct endpoints of the lanes it closed are closed (sendSync,
//     syncFenced): a peer that hears of the failover knows that this
//     side's end of the failed lane applies nothing any more;
//   - a side that started a failover (its sync unanswered) posts the
//     writes of a transfer that moves (Put, rendezvous PUT) again only
//     once the answer came (parkRetry, unfence): by then the peer's end
//     of the failed lane is closed, so no copy sent on it lands after the
//     copy sent on the new lane, nor after the completion that follows.
//
// A side that moves because the peer's sync named the failed lane
// restarts its writes at once: the peer closed its end before sending the
// sync. Reads (Get, rendezvous GET) restart at once: what they bring back
// lands through this side's own end of the failed lane, closed before its
// operations report (the close cancels them).

// fencedXfer is a transfer waiting for the answer to its endpoint's sync
// before it moves, with the status its chunks on the failed lane ended
// with.
type fencedXfer struct {
	r   *Request
	err error
}

// syncFenced reports whether a sync must wait because uct endpoints of
// closed lanes are not closed yet (lock held); whoever closes them sends
// it from the backlog afterwards.
func (w *Worker) syncFenced() bool { return len(w.laneClose) != 0 }

// parkRetry keeps write transfer r, whose chunks on a failed lane all
// reported with err, from moving while ep's sync is unanswered (lock
// held). It reports whether r waits; unfence moves it. Reports of r's old
// attempt that come late find a completion r no longer uses (onComp).
func (w *Worker) parkRetry(r *Request, err error) bool {
	f := r.ep.fo
	if !r.xput || !f.fov.syncing {
		return false
	}
	c := &uct.Completion{}
	c.Func = r.onComp
	r.xc, r.zombie = c, true
	r.xredo = true
	f.fenced = append(f.fenced, fencedXfer{r: r, err: err})
	return true
}

// unfence moves the transfers parkRetry held, now that the peer answered
// ep's sync (lock held). One the endpoint's failure completed meanwhile
// is left alone; one that cannot move finishes as finishChunks would.
func (w *Worker) unfence(ep *Endpoint) {
	f := ep.fo
	xs := f.fenced
	f.fenced = nil
	for _, x := range xs {
		if x.r.isDone() || x.r.ep != ep {
			continue
		}
		w.finishChunks(x.r, x.err)
	}
}
