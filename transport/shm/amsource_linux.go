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

// AMSourceOrigin returns src: a source is the sending iface itself.
func (it *Iface) AMSourceOrigin(src uct.AMSource) (uint64, bool) { return uint64(src), true }

// PeerOrigin returns the origin of the peer iface's messages to ours: its
// pid and segment fd.
func (ep *Endpoint) PeerOrigin() uint64 { return uint64(ep.peer.PID)<<32 | uint64(ep.peer.FD) }

var (
	_ uct.AMOriginIface    = (*Iface)(nil)
	_ uct.AMOriginEndpoint = (*Endpoint)(nil)
)
