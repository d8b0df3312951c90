package verbs

import (
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

// SetRDMADisabled is the administrative switch of the device, with
// NetworkDirect's adapter-status semantics. Disabling it moves every QP to
// ERR (its outstanding work completes with WCWRFlushErr), refuses new QPs
// with uct.ErrLocalNICFailed, drops every packet it receives and posts
// EventDeviceFatal; watchers see DeviceRDMADisabled added to the link
// flag. Enabling it again posts EventPortActive and clears the flag; QPs
// that went to ERR stay there (reconnect). A change to the current state
// does nothing.
func (d *Device) SetRDMADisabled(disabled bool) error {
	d.adminMu.Lock()
	defer d.adminMu.Unlock()
	d.mu.Lock()
	closed, same := d.closed, d.rdmaDisabled == disabled
	d.mu.Unlock()
	if closed {
		return fmt.Errorf("verbs: set rdma disabled: %w", uct.ErrClosed)
	}
	if same {
		return nil
	}
	if disabled {
		// The status changes before any work is flushed, so that an
		// owner who polls a flushed completion and asks why finds the
		// device disabled (ucp names the fault ErrLocalNICFailed).
		d.Watchers.SetRDMADisabled(true)
	}
	d.mu.Lock()
	d.rdmaDisabled = disabled
	obj := "device " + d.name
	if disabled {
		for _, qp := range d.qps {
			if qp.state != QPSReset && qp.state != QPSErr {
				qp.toErrLocked()
			}
		}
		d.postEvent(uct.EventDeviceFatal, obj, d, fmt.Errorf("verbs: %s: RDMA disabled: %w", d.name, uct.ErrLocalNICFailed))
	} else {
		d.postEvent(uct.EventPortActive, obj, d, nil)
	}
	d.mu.Unlock()
	if !disabled {
		// Usable again only once the device accepts QPs.
		d.Watchers.SetRDMADisabled(false)
	}
	return nil
}
