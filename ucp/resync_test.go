package ucp

import (
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
)

// TestResyncLostSync: a failover sync that is lost (here: marked sent
// but never put on a lane, as when the lane it left on is rebuilt with
// the sync still in its old queue) holds the endpoint's sequenced sends
// until it is answered. The probe rounds send it again, the peer answers,
// and a tag message posted behind it arrives.
func TestResyncLostSync(t *testing.T) {
	pol := failover.DefaultPolicy()
	pol.ProbeInterval = 20 * time.Millisecond
	ws := standbyPair(t, pol)
	ab, err := ws[0].Connect(ws[1].Address(), EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	tagOver(t, ws[:], ab, ws[1], 1, []byte("wire up"))
	w := ws[0]
	w.lock()
	if ab.fo == nil || len(ab.lanes) < 2 {
		w.unlock()
		t.Fatalf("want a sequenced endpoint with two lanes: %d lanes", len(ab.lanes))
	}
	now := time.Now()
	ab.fo.fov = foState{kind: failover.FailedBack, from: 1, to: ab.amLane, seen: now, sentAt: now, syncing: true}
	w.unlock()
	tagOver(t, ws[:], ab, ws[1], 2, []byte("behind the lost sync"))
	w.lock()
	syncing, n := ab.fo.fov.syncing, w.stats.Resyncs
	w.unlock()
	if syncing || n == 0 {
		t.Fatalf("sync still unanswered %v, resent %d times", syncing, n)
	}
	t.Logf("the sync went again %d time(s)", n)
}
