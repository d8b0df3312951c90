package ucp

import "time"

// Numbered failover syncs. Each failover and fail-back of an endpoint
// takes the next number of its side (syncNums.next); the sync carries it,
// and so does the answer, which names the sync it answers. A sync can be
// lost: with the lane it went on (a lane closed because the peer failed
// over from it, or rebuilt after its link flapped, drops what it still
// held), or its answer with the lane that carried that. Nothing would
// send either again, and sequenced sends wait for the answer, so a sync
// still unanswered is sent again (resync) on the AM lane of the moment:
// at once when that lane is no longer the one the sync went on, else once
// it has been unanswered for a probe interval. The receiver acts on each
// number once (fromPeer): a repeat, which may name a lane that has come
// back since, is only answered. An answer whose number is not that of
// our sync in progress answers one that a newer failover superseded (or
// answers ours a second time) and clears nothing.

// syncNums numbers an endpoint's syncs (epSeq.syncs, lock held).
type syncNums struct {
	last uint32 // our last sync's number
	peer uint32 // the peer's last sync acted on (0: none yet)
	// loseSyncs and loseReplies make the next sendSync calls of our
	// syncs, or of our answers, drop the message as the wire would;
	// tests set them, to lose a sync at a chosen point of a failover
	loseSyncs, loseReplies int
}

// next numbers a new sync of ours (never 0).
func (s *syncNums) next() uint32 {
	if s.last++; s.last == 0 {
		s.last = 1
	}
	return s.last
}

// fromPeer reports whether n numbers a sync of the peer newer than the
// last it acted on, and notes it: the numbers of a long-lived endpoint
// may wrap.
func (s *syncNums) fromPeer(n uint32) bool {
	if s.peer != 0 && int32(n-s.peer) <= 0 {
		return false
	}
	s.peer = n
	return true
}

// lose reports whether this send of a sync (or of an answer) is to be
// lost (tests only).
func (s *syncNums) lose(reply bool) bool {
	p := &s.loseSyncs
	if reply {
		p = &s.loseReplies
	}
	if *p == 0 {
		return false
	}
	*p--
	return true
}

// resync sends ep's sync again if it is unanswered and the AM lane moved
// from the lane it went on, or it went a probe interval ago (lock held;
// from onSync and the probe rounds).
func (w *Worker) resync(ep *Endpoint) {
	f := ep.fo
	if f == nil || !f.fov.syncing || f.fov.syncDue || f.fov.txAt.IsZero() {
		return
	}
	if ep.amLane == f.fov.txLane && time.Since(f.fov.txAt) < w.cfg.Failover.ProbeInterval {
		return
	}
	w.stats.Resyncs++
	w.sendSync(ep, false)
}
