package ucp

import (
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/uct"
)

// The failover syncs of an endpoint are numbered (syncnum.go). These
// tests fail a real lane (the shm device of worker 0 disabled and enabled
// again, as in TestStandbyShmDisabled) and lose one sync, or one answer,
// at the point a flapping link loses it: with the lane it went on. The
// sender's syncNums.loseSyncs / loseReplies drops that one message at
// the sending side (RC retransmits a dropped packet, so no packet-level
// fault loses a message; only a lane closed with the message still in
// it does, and that needs a race between the two sides).

// TestSyncLostFailBack: worker 0 fails back to its rebuilt shm lane and
// its sync is lost. Its sequenced sends wait for the answer, so without
// the sync sent again its traffic would stop for good; the probe round
// sends it again, the peer answers, and traffic goes on both ways, every
// message once and in order.
func TestSyncLostFailBack(t *testing.T) {
	p := newSyncPair(t)
	p.failOverToRC(t)
	p.stream(t, 10, 5)
	p.loseNextSync()
	p.setDevice(t, uct.DeviceUp)
	p.wait(t, "worker 0's fail-back sync sent and lost", p.syncLost)
	if !p.syncing(0) {
		t.Fatal("worker 0 does not wait for its fail-back sync's answer")
	}
	// a late answer to worker 0's failover sync, the one before, as
	// from a lane that held it for a while: it must not end the wait
	// for the fail-back's answer
	p.ws[0].lock()
	stale := syncMsg{dst: p.ab.rid, flags: syncReply, num: p.ab.fo.fov.num - 1, delivered: 1}
	rc := p.laneOf(p.ab, "rc")
	p.ws[0].unlock()
	p.ws[0].onSync(rc, stale.encode(nil), 0)
	if !p.syncing(0) {
		t.Fatal("an answer to an older sync ended the wait for the fail-back sync's answer")
	}
	p.stream(t, 20, 50)
	p.wait(t, "traffic back on shm", func() bool { return p.on("shm") && !p.syncing(0) && !p.syncing(1) })
	p.stream(t, 30, 5)
	st := p.ws[0].Stats()
	if st.Resyncs == 0 {
		t.Fatal("the lost sync was not sent again")
	}
	if n := p.count(0, failover.FailedBack); n != 1 {
		t.Errorf("worker 0 reported %d fail-backs, want 1", n)
	}
	t.Logf("worker 0: %d syncs sent again; events %v / %v", st.Resyncs, p.evs[0], p.evs[1])
}

// TestSyncAnswerLost: worker 0 fails over from shm and the answer to its
// sync is lost. Worker 0 sends the sync again; worker 1, which acted on
// the first copy (it failed its end of the shm lane), only answers the
// repeat. A copy of that sync arriving once the shm lanes are back is
// answered too and fails nothing.
func TestSyncAnswerLost(t *testing.T) {
	p := newSyncPair(t)
	p.ws[1].lock()
	p.ba.fo.syncs.loseReplies = 1
	p.ws[1].unlock()
	p.setDevice(t, uct.DeviceRDMADisabled)
	p.wait(t, "worker 1's answer sent and lost", func() bool {
		p.ws[1].lock()
		defer p.ws[1].unlock()
		return p.ba.fo.syncs.loseReplies == 0
	})
	p.ws[0].lock()
	num := p.ab.fo.fov.num
	lost := syncMsg{dst: p.ab.rid, flags: syncLane, num: num, status: uint8(uct.ErrLocalNICFailed)}
	ln := &p.ab.lanes[0]
	lost.local = mdPartName(ln.wi.md.comp.Name(), ln.wi.ord)
	lost.remote = mdPartName(ln.wi.md.comp.Name(), ln.rord)
	p.ws[0].unlock()
	if ln.attr.Transport != "shm" || !p.syncing(0) {
		t.Fatalf("worker 0: lane 0 is %s, syncing %v", ln.attr.Transport, p.syncing(0))
	}
	p.stream(t, 10, 50)
	p.wait(t, "sync answered", func() bool { return !p.syncing(0) && !p.syncing(1) && p.on("rc") })
	if st := p.ws[0].Stats(); st.Resyncs == 0 {
		t.Fatal("the unanswered sync was not sent again")
	}
	// worker 1 failed its shm lane once: on worker 0's report that its
	// device is down, or on the sync, whichever came first
	if n := p.count(1, failover.FailedOver); n != 1 {
		t.Fatalf("worker 1 reported %d failovers, want 1: %v", n, p.evs[1])
	}
	p.setDevice(t, uct.DeviceUp)
	p.wait(t, "traffic back on shm", func() bool { return p.on("shm") && !p.syncing(0) && !p.syncing(1) })
	// a late copy of the sync naming the shm lane, as from a lane that
	// held it for a while
	p.ws[1].lock()
	rc := p.laneOf(p.ba, "rc")
	p.ws[1].unlock()
	lost.delivered = 1
	p.ws[1].onSync(rc, lost.encode(nil), 0)
	p.stream(t, 20, 5)
	p.ws[1].lock()
	shmFailed := p.ba.lanes[0].failed
	p.ws[1].unlock()
	if shmFailed != nil || !p.on("shm") {
		t.Fatalf("a repeat of an old sync failed worker 1's shm lane: %v", shmFailed)
	}
	if n := p.count(1, failover.FailedOver); n != 1 {
		t.Fatalf("worker 1 reported %d failovers after the late copy, want 1: %v", n, p.evs[1])
	}
}

// TestSyncSuperseded: worker 0's fail-back sync is lost and the lane it
// failed back to fails again before the sync went again. The failover's
// sync supersedes the lost one: worker 1 acts on it, its answer ends the
// wait, and traffic goes on over rc.
func TestSyncSuperseded(t *testing.T) {
	p := newSyncPair(t)
	p.failOverToRC(t)
	p.loseNextSync()
	p.setDevice(t, uct.DeviceUp)
	p.wait(t, "worker 0's fail-back sync sent and lost", p.syncLost)
	p.ws[0].lock()
	back := p.ab.fo.fov.num
	p.ws[0].unlock()
	failed := p.count(0, failover.FailedOver)
	p.setDevice(t, uct.DeviceRDMADisabled)
	p.stream(t, 10, 50)
	p.wait(t, "failed over again", func() bool {
		return p.count(0, failover.FailedOver) > failed && p.on("rc") && !p.syncing(0) && !p.syncing(1)
	})
	p.ws[0].lock()
	num := p.ab.fo.fov.num
	p.ws[0].unlock()
	if num != back+1 {
		t.Fatalf("the failover's sync is number %d, the lost fail-back's %d", num, back)
	}
	if n := p.count(0, failover.FailedBack); n != 0 {
		t.Errorf("worker 0 reported %d fail-backs for a fail-back whose sync was lost and superseded", n)
	}
}

// TestSyncAnswerAfterPeerSync: worker 0's fail-back sync is lost and
// goes again before worker 1 rebuilt its shm lane, so worker 1 answers
// over rc; then worker 1 fails back to shm itself. Worker 0 handles
// worker 1's sync (shm) before the older answer (rc): the answer must
// not move worker 0's traffic to rc, away from where worker 1's went.
func TestSyncAnswerAfterPeerSync(t *testing.T) {
	p := newSyncPair(t)
	p.failOverToRC(t)
	p.loseNextSync()
	p.setDevice(t, uct.DeviceUp)
	only := func(i int, what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); p.ws[i].Progress() {
			if time.Now().After(deadline) {
				t.Fatalf("worker %d: timed out waiting for %s", i, what)
			}
		}
	}
	only(0, "the fail-back sync sent and lost, and sent again", func() bool {
		p.ws[0].lock()
		defer p.ws[0].unlock()
		return p.ab.fo.syncs.loseSyncs == 0 && p.ws[0].stats.Resyncs > 0
	})
	only(1, "worker 1 answered and failed back", func() bool { return p.count(1, failover.FailedBack) > 0 || p.syncing(1) })
	p.wait(t, "both sides back on shm", func() bool { return p.on("shm") && !p.syncing(0) && !p.syncing(1) })
	p.stream(t, 10, 5)
	if n := p.count(0, failover.FailedBack); n != 1 {
		t.Fatalf("worker 0 reported %d fail-backs, want 1", n)
	}
}
