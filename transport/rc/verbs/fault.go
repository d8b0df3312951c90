package verbs

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/uct"
)

// corruptEvery bounds the corrupt-packet events of a device: a flood of
// bad packets posts one event a second, with the count.
const corruptEvery = time.Second

// corruptLocked counts a received packet that failed its ICRC and posts
// EventCorruptPacket, at most once per corruptEvery, with the number of
// such packets since the last event.
func (d *Device) corruptLocked(src string, err error) {
	d.ctr.RxICRCErrors++
	now := d.now()
	if d.corruptAt != 0 && now-d.corruptAt < int64(corruptEvery) {
		return
	}
	n := d.ctr.RxICRCErrors - d.corruptSeen
	d.corruptAt, d.corruptSeen = now, d.ctr.RxICRCErrors
	d.postEvent(uct.EventCorruptPacket, "port "+d.name, d,
		fmt.Errorf("verbs: %s: %d packets with a bad ICRC, the last from %s: %w: %w", d.name, n, src, err, uct.ErrDataCorrupt))
}

// rxFailedLocked handles an error of the socket's receive call. Errors
// that say the descriptor is no longer a usable socket (EBADF, ENOTSOCK,
// EINVAL) mean the device is dead: every QP goes to ERR, the device stops
// receiving and refuses new QPs, and EventDeviceFatal is posted once.
// Others (EAGAIN, a transient shortage, an ICMP error) are not fatal: the
// next receive tries again.
func (d *Device) rxFailedLocked(err error) {
	if err == nil || err == unix.EAGAIN || d.fatal || !(errors.Is(err, unix.EBADF) || errors.Is(err, unix.ENOTSOCK) || errors.Is(err, unix.EINVAL)) {
		return
	}
	d.fatal = true
	d.rdmaDisabled = true
	for _, qp := range d.qps {
		if qp.state != QPSReset && qp.state != QPSErr {
			qp.toErrLocked()
		}
	}
	d.postEvent(uct.EventDeviceFatal, "device "+d.name, d,
		fmt.Errorf("verbs: %s: socket failed: %w: %w", d.name, err, uct.ErrLocalNICFailed))
}
