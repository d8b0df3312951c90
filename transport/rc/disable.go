package rc

import (
	"fmt"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// SetRDMADisabled is the administrative switch of the iface's device
// (NetworkDirect's RDMA-disabled adapter status); see
// verbs.Device.SetRDMADisabled. It affects every iface of the device.
func (it *Iface) SetRDMADisabled(disabled bool) error {
	return it.dev.SetRDMADisabled(disabled)
}

// deviceStatus follows the device's status (on the goroutine that changed
// it). Link down makes operations fail with uct.ErrRouteLost, a transient
// status. RDMA disabled is not transient: every endpoint fails with
// uct.ErrLocalNICFailed at its next operation or Progress (its pending
// requests are dispatched and meet that error, its operations in flight
// were flushed by the device), new connections are refused, and the peers
// are told with a DOWN message on every connection manager link, so that
// their endpoints fail with uct.ErrRemoteNICFailed at once instead of
// after their retries; the passive QPs of those links are released.
func (it *Iface) deviceStatus(s uct.DeviceStatus) {
	it.linkDown.Store(!s.Has(uct.DeviceUp))
	disabled := s.Has(uct.DeviceRDMADisabled)
	if it.rdmaDisabled.Swap(disabled) == disabled || !disabled {
		return
	}
	cause := fmt.Errorf("RDMA disabled on %s", it.dev.Name())
	it.mu.Lock()
	for _, ep := range it.eps {
		e := ep.opErr("device", uct.ErrLocalNICFailed, cause)
		ep.asyncErr.CompareAndSwap(nil, &e)
		if ep.conn != nil && !ep.closing.Load() {
			ep.conn.SetWriteDeadline(time.Now().Add(cmByeTimeout))
			ep.conn.Write((&cmMsg{Type: cmDOWN, QPN: ep.peerQPN}).encode())
		}
	}
	it.mu.Unlock()
	if it.cm != nil {
		it.cm.down()
	}
	it.attention.Store(true)
	it.Wake()
}

// down sends DOWN on every established connection, so that the
// requesters' endpoints learn that this side's device was disabled, and
// closes it: its handler then releases the passive QP. The listener stays
// open; while the device is disabled, requests are rejected.
func (s *cmServer) down() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c, qpn := range s.conns {
		if qpn != 0 {
			c.SetWriteDeadline(time.Now().Add(cmByeTimeout))
			c.Write((&cmMsg{Type: cmDOWN, QPN: qpn}).encode())
			c.Close()
		}
	}
}
