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

var _ uct.AMSourceIface = (*Iface)(nil)
