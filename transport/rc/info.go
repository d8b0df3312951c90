package rc

import (
	"net/netip"

	"github.com/ucgo/ucgo/transport/rc/verbs"
)

// PortInfo describes an iface's device and UDP port, for diagnostics.
type PortInfo struct {
	// Local is the device's IP address and UDP port.
	Local netip.AddrPort
	// Port is the verbs port's state, MTU and GID.
	Port verbs.PortAttr
	// Shared says the UDP port is shared with the host's other processes
	// (SK_REUSEPORT, steered by QP number); ShareErr says why it is not
	// when it was to be.
	Shared   bool
	ShareErr error
	// QPNFirst and QPNLast bound the QP numbers of this device: on a
	// shared port, the slot whose packets are steered to this process.
	QPNFirst, QPNLast uint32
}

// PortInfo returns the state of the iface's device and port.
func (it *Iface) PortInfo() PortInfo {
	shared, why := it.dev.SharedPort()
	first, last := it.dev.QPNRange()
	return PortInfo{Local: it.dev.LocalAddr(), Port: it.dev.QueryPort(), Shared: shared, ShareErr: why, QPNFirst: first, QPNLast: last}
}
