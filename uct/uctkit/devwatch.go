package uctkit

import (
	"sync"

	"github.com/ucgo/ucgo/uct"
)

// DeviceWatchers is the registry of watchers of one device
// (Nd2RegisterForAdapterStatus). Transports embed one per device.
type DeviceWatchers struct {
	deliver sync.Mutex // serializes Set so watchers see changes in order
	mu      sync.Mutex
	device  string
	status  uct.DeviceStatus
	next    int
	watches map[int]func(uct.DeviceStatusEvent)
}

// Init names the device and sets its first status.
func (d *DeviceWatchers) Init(device string, status uct.DeviceStatus) {
	d.mu.Lock()
	d.device, d.status = device, status
	d.mu.Unlock()
}

// Status returns the last status set.
func (d *DeviceWatchers) Status() uct.DeviceStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status
}

// Register adds fn; it is called on every status change (on the goroutine
// that sets the status).
func (d *DeviceWatchers) Register(fn func(uct.DeviceStatusEvent)) (*uct.Watch, error) {
	if fn == nil {
		return nil, uct.ErrInvalidParam
	}
	d.mu.Lock()
	if d.watches == nil {
		d.watches = map[int]func(uct.DeviceStatusEvent){}
	}
	id := d.next
	d.next++
	d.watches[id] = fn
	d.mu.Unlock()
	return uct.NewWatch(func() {
		d.mu.Lock()
		delete(d.watches, id)
		d.mu.Unlock()
	}), nil
}

// Set changes the status and tells every watcher if it changed. Concurrent
// Sets are delivered one after the other, in the order they were applied,
// so the last event a watcher saw is the current status. A watcher must
// not call Set.
func (d *DeviceWatchers) Set(status uct.DeviceStatus) {
	d.Change(func(uct.DeviceStatus) uct.DeviceStatus { return status })
}

// Change applies f to the status, atomically with respect to other
// changes, and tells every watcher if the status changed (as Set does). It
// returns the old and the new status.
func (d *DeviceWatchers) Change(f func(old uct.DeviceStatus) uct.DeviceStatus) (old, status uct.DeviceStatus) {
	d.deliver.Lock()
	defer d.deliver.Unlock()
	d.mu.Lock()
	old = d.status
	status = f(old)
	if old == status {
		d.mu.Unlock()
		return old, status
	}
	d.status = status
	fns := make([]func(uct.DeviceStatusEvent), 0, len(d.watches))
	for _, fn := range d.watches {
		fns = append(fns, fn)
	}
	ev := uct.DeviceStatusEvent{Device: d.device, Status: status}
	d.mu.Unlock()
	for _, fn := range fns {
		fn(ev)
	}
	return old, status
}

// SetLink changes the link flag (uct.DeviceUp or uct.DeviceDown), keeping
// uct.DeviceRDMADisabled.
func (d *DeviceWatchers) SetLink(up bool) (old, status uct.DeviceStatus) {
	return d.Change(func(s uct.DeviceStatus) uct.DeviceStatus {
		s &^= uct.DeviceUp | uct.DeviceDown
		if up {
			return s | uct.DeviceUp
		}
		return s | uct.DeviceDown
	})
}

// SetRDMADisabled sets or clears uct.DeviceRDMADisabled, keeping the link flag.
func (d *DeviceWatchers) SetRDMADisabled(disabled bool) (old, status uct.DeviceStatus) {
	return d.Change(func(s uct.DeviceStatus) uct.DeviceStatus {
		if disabled {
			return s | uct.DeviceRDMADisabled
		}
		return s &^ uct.DeviceRDMADisabled
	})
}
