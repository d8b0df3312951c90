package shm

import (
	"fmt"

	"go.uber.org/multierr"

	"github.com/ucgo/ucgo/uct"
)

// SetDeviceStatus is the administrative switch of the iface's "memory"
// device, with NetworkDirect's adapter-status semantics. The status is a
// set of flags: DeviceUp or DeviceDown, with or without
// DeviceRDMADisabled; a status without a link flag keeps the current one.
// Every change is told to the device's watchers and posted as one event
// per changed flag: EventPortError (link down), EventPortActive (link up,
// or RDMA enabled again), EventDeviceFatal (RDMA disabled).
//
// When the device stops being usable (link down or RDMA disabled):
//   - new operations and connections fail with uct.ErrLocalNICFailed;
//   - every endpoint enters its error state with it, and its pending
//     requests complete: a uct.PendingCanceler is told uct.ErrCanceled,
//     any other request is dispatched once and meets the error in its own
//     post (it owns reporting it, as the PendingRequest contract says);
//   - the iface stops receiving: Progress delivers nothing and the
//     messages waiting in its FIFO stay there;
//   - the endpoints' resources are released (peer mappings, pidfd
//     watchers), as if each had been closed; their Close does nothing more;
//   - peers learn it: the segment header says so, and their endpoints to
//     this iface fail with uct.ErrRemoteNICFailed on their next operation
//     or liveness check.
//
// When it becomes usable again, new connections work; endpoints that
// failed stay failed (reconnect). SetDeviceStatus must not run while an
// operation runs on one of the iface's endpoints: releasing an endpoint
// unmaps memory such an operation could still be copying to.
func (it *Iface) SetDeviceStatus(s uct.DeviceStatus) error {
	if it.closed.Load() {
		return uct.NewOpError(transportName, "set_device_status", "", uct.ErrClosed, nil)
	}
	link := s & (uct.DeviceUp | uct.DeviceDown)
	if s&^(uct.DeviceUp|uct.DeviceDown|uct.DeviceRDMADisabled) != 0 || link == uct.DeviceUp|uct.DeviceDown {
		return uct.NewOpError(transportName, "set_device_status", "", uct.ErrInvalidParam, fmt.Errorf("status %v", s))
	}
	it.devMu.Lock()
	defer it.devMu.Unlock()
	old, now := it.watch.Change(func(old uct.DeviceStatus) uct.DeviceStatus {
		if link == 0 {
			return old&(uct.DeviceUp|uct.DeviceDown) | s
		}
		return s
	})
	if old == now {
		return nil
	}
	cause := fmt.Errorf("device memory is %v", now)
	devErr := uct.NewOpError(transportName, "device", "", uct.ErrLocalNICFailed, cause)
	if old.Usable() && !now.Usable() {
		it.disabled.Store(&cause)
		storeU32(it.seg, hdrDisabled, 1)
		for _, ep := range it.endpoints() {
			ep.deviceDisabled(cause)
		}
	}
	if now.Usable() && !old.Usable() {
		storeU32(it.seg, hdrDisabled, 0)
		it.disabled.Store(nil)
	}
	post := func(typ uct.EventType, err error) {
		it.events.Post(&uct.Event{Type: typ, Object: "device memory", Owner: it, Err: err})
	}
	switch {
	case old.Has(uct.DeviceUp) && now.Has(uct.DeviceDown):
		post(uct.EventPortError, devErr)
	case old.Has(uct.DeviceDown) && now.Has(uct.DeviceUp):
		post(uct.EventPortActive, nil)
	}
	switch {
	case !old.Has(uct.DeviceRDMADisabled) && now.Has(uct.DeviceRDMADisabled):
		post(uct.EventDeviceFatal, devErr)
	case old.Has(uct.DeviceRDMADisabled) && !now.Has(uct.DeviceRDMADisabled):
		post(uct.EventPortActive, nil)
	}
	return nil
}

// deviceDisabled fails the endpoint because its own device became
// unusable, completes its pending requests and releases it.
func (ep *Endpoint) deviceDisabled(cause error) {
	err := error(uct.NewOpError(transportName, "device", ep.name, uct.ErrLocalNICFailed, cause))
	ep.err.CompareAndSwap(nil, &err)
	ep.PendingPurge(func(r uct.PendingRequest) {
		if c, ok := r.(uct.PendingCanceler); ok {
			c.CancelPending(uct.ErrCanceled)
			return
		}
		r.Dispatch() // fails with the endpoint's error, which r reports
	})
	if cerr := ep.Close(); cerr != nil {
		ep.it.errh.Call(ep, multierr.Append(err, cerr))
	}
}

// peerDisabled fails the endpoint because the peer's device is down or
// RDMA-disabled, and returns op's error.
func (ep *Endpoint) peerDisabled(op string) error {
	ep.fail(uct.EventEndpointError, uct.NewOpError(transportName, "peer", ep.name, uct.ErrRemoteNICFailed,
		fmt.Errorf("device of pid %d is down or disabled", ep.peer.PID)))
	if p := ep.err.Load(); p != nil {
		return uct.NewOpError(transportName, op, ep.name, uct.StatusOf(*p), *p)
	}
	return ep.opErr(op, uct.ErrRemoteNICFailed, nil) // closing meanwhile
}
