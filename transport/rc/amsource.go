package rc

import (
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

// SetAMSourceHandler installs h for id; h is told each message's source,
// the number of the QP that received it (the QP this iface created for
// the sending peer endpoint). nil removes it.
func (it *Iface) SetAMSourceHandler(id uint8, h uct.AMSourceHandler, arg any) error {
	if id > uct.MaxAMID {
		return fmt.Errorf("rc: AM id %d > %d: %w", id, uct.MaxAMID, uct.ErrInvalidParam)
	}
	it.am[id].h, it.am[id].hs, it.am[id].arg = nil, h, arg
	return nil
}

// AMSourceOrigin returns the nonce of the iface whose connection created
// the QP src.
func (it *Iface) AMSourceOrigin(src uct.AMSource) (uint64, bool) {
	it.mu.Lock()
	defer it.mu.Unlock()
	if pq := it.passive[uint32(src)]; pq != nil && uint64(uint32(src)) == uint64(src) {
		return pq.origin, true
	}
	return 0, false
}

// PeerOrigin returns the nonce of the peer iface.
func (ep *Endpoint) PeerOrigin() uint64 { return ep.peer.Nonce }

var (
	_ uct.AMSourceIface    = (*Iface)(nil)
	_ uct.AMOriginIface    = (*Iface)(nil)
	_ uct.AMOriginEndpoint = (*Endpoint)(nil)
)
