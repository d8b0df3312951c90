package uct

import (
	"sync/atomic"
	"time"
)

// ProgressGroup stands for one progress loop that drives several ifaces
// in turn (a ucp worker's Progress polls each of its ifaces). A transport
// whose devices have a background progress of their own (rc's watchdog
// goroutine, which runs a device's engine once its owner has left it alone
// for an interval) asks the groups of a device's ifaces before taking the
// device over: while the loop runs a pass on another iface of the group,
// or started one within the interval, the owner is progressing and comes
// back to this device, and the background goroutine leaves it alone (up to
// a bound the transport sets). Taking the device over then would only
// make the owner wait for the engine's lock and move the device's work to
// another thread while the owner works on its sibling.
//
// Pass a group in IfaceParams.Group; transports without a background
// progress ignore it. The zero value is ready to use; it must not be
// copied after first use.
type ProgressGroup struct {
	last   atomic.Int64 // GroupClock at the start of the latest pass
	passes atomic.Int32 // passes running
}

var groupEpoch = time.Now()

// GroupClock returns t on ProgressGroup's clock: nanoseconds since a
// process-wide monotonic epoch. A transport that keeps time as
// nanoseconds since an epoch of its own adds GroupClock(its epoch).
func GroupClock(t time.Time) int64 { return int64(t.Sub(groupEpoch)) }

// Enter marks the start of a pass of the loop on one of its ifaces at now
// (GroupClock); Leave marks its end.
func (g *ProgressGroup) Enter(now int64) {
	g.passes.Add(1)
	g.last.Store(max(now, 1)) // 0: no pass yet
}

// Leave marks the end of a pass that Enter started.
func (g *ProgressGroup) Leave() { g.passes.Add(-1) }

// Active reports whether a pass of the loop is running or one started
// less than within nanoseconds before now (GroupClock).
func (g *ProgressGroup) Active(now, within int64) bool {
	if g.passes.Load() > 0 {
		return true
	}
	last := g.last.Load()
	return last != 0 && now-last < within
}
