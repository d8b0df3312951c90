package verbs

import (
	"sync/atomic"
	"unsafe"
)

// addrOf returns the virtual address of b's first byte (0 for an empty
// slice). Go's heap does not move objects, and an MR keeps its slice
// referenced, so the address is stable for the MR's life.
func addrOf(b []byte) uint64 {
	if cap(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// word64 returns a pointer to the 8 bytes at b[off:]; the caller checked
// bounds and that the address is 8-byte aligned.
func word64(b []byte, off uint64) *uint64 {
	return (*uint64)(unsafe.Pointer(&b[off]))
}

// atomicCmpSwap does an IB CMP_AND_SWP on MR memory and returns the
// original value. Values are in host byte order, as on an HCA.
func atomicCmpSwap(b []byte, off, cmp, swap uint64) uint64 {
	p := word64(b, off)
	for {
		old := atomic.LoadUint64(p)
		if old != cmp {
			return old
		}
		if atomic.CompareAndSwapUint64(p, old, swap) {
			return old
		}
	}
}

// atomicFetchAdd does an IB FETCH_AND_ADD on MR memory and returns the
// original value.
func atomicFetchAdd(b []byte, off, add uint64) uint64 {
	return atomic.AddUint64(word64(b, off), add) - add
}
