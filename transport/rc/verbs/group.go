package verbs

import (
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

// Progress groups. A CQ's owner that drives several devices from one loop
// (a ucp worker with one rc iface per netdev) names that loop with
// SetProgressGroup: every Poll of the CQ marks a pass of the loop in the
// group. The device's watchdog (background) does not take the device over
// while a group of one of its CQs is active (a pass runs, or one started
// within the watchdog interval): the owner is busy with a sibling device
// and comes back to this one. Without this, one loop that drives two
// busy devices leaves each alone for as long as a pass on the other takes,
// the other's watchdog fires, and from then on the watchdog goroutine and
// the owner take turns on the engine's lock: the owner blocks in Poll
// behind a pass of the watchdog's, on another thread, which leaves the
// sibling device alone in turn.
//
// groupMaxIdle bounds that: a device whose engine has not run for that
// many watchdog intervals is taken over even while a group is active, so
// a device its owner polls rarely (an idle iface of a busy worker) still
// has its ACKs and timers run.
const groupMaxIdle = 8

// SetProgressGroup makes g (nil: none) the progress loop that polls cq;
// see uct.ProgressGroup.
func (cq *CQ) SetProgressGroup(g *uct.ProgressGroup) error {
	d := cq.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if cq.closed {
		return fmt.Errorf("verbs: cq %d: set progress group: %w", cq.id, uct.ErrClosed)
	}
	d.dropGroupLocked(cq.group)
	cq.group = g
	if g != nil {
		if d.grpRefs == nil {
			d.grpRefs = map[*uct.ProgressGroup]int{}
		}
		d.grpRefs[g]++
		d.publishGroupsLocked()
	}
	return nil
}

// dropGroupLocked drops one CQ's reference to g (mu held).
func (d *Device) dropGroupLocked(g *uct.ProgressGroup) {
	if g == nil {
		return
	}
	if d.grpRefs[g]--; d.grpRefs[g] <= 0 {
		delete(d.grpRefs, g)
	}
	d.publishGroupsLocked()
}

// publishGroupsLocked hands the watchdog a new list of the groups (mu
// held); the watchdog reads it without the lock.
func (d *Device) publishGroupsLocked() {
	gs := make([]*uct.ProgressGroup, 0, len(d.grpRefs))
	for g := range d.grpRefs {
		gs = append(gs, g)
	}
	d.groups.Store(&gs)
}

// ownerBusy reports whether an owner of d progresses a sibling device:
// a group of one of d's CQs is active at now (ns since d.epoch), and d's
// own engine ran less than groupMaxIdle intervals ago (idle ns).
func (d *Device) ownerBusy(now, idle int64) bool {
	if idle >= groupMaxIdle*d.wdIv {
		return false
	}
	gs := d.groups.Load()
	if gs == nil {
		return false
	}
	at := now + d.grpOff
	for _, g := range *gs {
		if g.Active(at, d.wdIv) {
			return true
		}
	}
	return false
}
