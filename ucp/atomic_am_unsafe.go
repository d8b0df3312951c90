package ucp

import (
	"sync/atomic"
	"unsafe"

	"github.com/ucgo/ucgo/uct"
)

// atomicApply applies op to the 8-byte aligned word b (len 8) and
// returns the word's old value; ok is false for an unknown op.
func atomicApply(b []byte, op uct.AtomicOp, value, compare uint64) (old uint64, ok bool) {
	p := (*uint64)(unsafe.Pointer(&b[0]))
	switch op {
	case uct.AtomicAdd:
		return atomic.AddUint64(p, value) - value, true
	case uct.AtomicAnd:
		return atomic.AndUint64(p, value), true
	case uct.AtomicOr:
		return atomic.OrUint64(p, value), true
	case uct.AtomicXor:
		for {
			o := atomic.LoadUint64(p)
			if atomic.CompareAndSwapUint64(p, o, o^value) {
				return o, true
			}
		}
	case uct.AtomicSwap:
		return atomic.SwapUint64(p, value), true
	case uct.AtomicCSwap:
		for {
			o := atomic.LoadUint64(p)
			if o != compare || atomic.CompareAndSwapUint64(p, o, value) {
				return o, true
			}
		}
	}
	return 0, false
}
