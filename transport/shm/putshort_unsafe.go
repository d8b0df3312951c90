//go:build linux

package shm

import (
	"sync/atomic"
	"unsafe"

	"github.com/ucgo/ucgo/uct"
)

// PutShort is directPut written out, so that the common put is one call,
// not two; everything else takes rma1. The store goes through the view's
// wptr: the bounds and the right to write are the two compares against
// wlim, so the copy carries no slice bounds checks of its own. Each check
// branches to the slow path on its own, so that none of them is kept as
// a flag.
func (ep *Endpoint) PutShort(buf []byte, raddr uint64, rk uct.RKey) error {
	var v *keyView
	var n, off uint64
	var p unsafe.Pointer
	k, _ := rk.(*RKey)
	if k == nil {
		goto slow
	}
	v = k.view.Load()
	if v == nil || v.ep != ep {
		goto slow
	}
	n, off = uint64(len(buf)), raddr-v.base
	if off >= v.wlim || n >= v.wlim-off {
		goto slow
	}
	if ep.err.Load() != nil {
		goto slow
	}
	if atomic.LoadUint32(ep.disabled) != 0 {
		goto slow
	}
	if atomic.LoadUint32(v.gen) != v.want {
		goto slow
	}
	p = unsafe.Add(unsafe.Pointer(v.wptr), off)
	if n == 8 {
		// one 8-byte load and store, not a call of memmove
		*(*[8]byte)(p) = [8]byte(buf)
	} else {
		putCopy(unsafe.Slice((*byte)(p), n), buf)
	}
	return nil
slow:
	_, err := ep.rma1("put_short", true, buf, raddr, rk)
	return err
}
