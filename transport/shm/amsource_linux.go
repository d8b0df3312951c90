package shm

import (
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

// SetAMSourceHandler installs h for id; h is told each message's source,
// the sending iface (its pid and segment fd) as the sender wrote it into
// the FIFO cell. Call it before traffic arrives.
func (it *Iface) SetAMSourceHandler(id uint8, h uct.AMSourceHandler, arg any) error {
	if id > uct.MaxAMID {
		return fmt.Errorf("shm: AM id %d: %w", id, uct.ErrInvalidParam)
	}
	it.handler[id] = amEntry{hs: h, arg: arg}
	return nil
}

var _ uct.AMSourceIface = (*Iface)(nil)

// PeerAMSource returns the source of the messages the peer iface sends to
// ours: its pid and segment fd.
func (ep *Endpoint) PeerAMSource() uct.AMSource {
	return uct.AMSource(uint64(ep.peer.PID)<<32 | uint64(ep.peer.FD))
}

var _ uct.AMSourceEndpoint = (*Endpoint)(nil)
