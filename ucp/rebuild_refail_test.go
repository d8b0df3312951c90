package ucp

import (
	"testing"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/uct"
)

// TestRebuildLaneFailsAgain: worker 0's shm device comes back and goes
// down again at once, so that the lanes rebuilt for its coming back fail
// as their fail-back's sync is posted. Such a lane stays failed, closed:
// traffic goes on over rc, and no endpoint sends on a lane it closed.
func TestRebuildLaneFailsAgain(t *testing.T) {
	p := newSyncPair(t)
	p.failOverToRC(t)
	p.setDevice(t, uct.DeviceUp)
	p.wait(t, "worker 0's shm lane rebuilt", func() bool { return p.count(0, failover.Restored) > 0 })
	p.setDevice(t, uct.DeviceRDMADisabled)
	p.stream(t, 10, 50)
	p.wait(t, "both sides on rc", func() bool { return p.on("rc") && !p.syncing(0) && !p.syncing(1) })
	p.stream(t, 20, 5)
	for i, ep := range []*Endpoint{p.ab, p.ba} {
		p.ws[i].lock()
		for li := range ep.lanes {
			if ln := &ep.lanes[li]; ln.failed == nil && ln.ep == nil {
				t.Errorf("worker %d: lane %d is offered to lane choice with its endpoint closed", i, li)
			}
		}
		p.ws[i].unlock()
	}
}
