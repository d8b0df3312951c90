package rc

import (
	"sync/atomic"
	"unsafe"
)

// atomicAdd32 adds v to the 4-byte aligned word at b[off:] with a CPU
// atomic.
func atomicAdd32(b []byte, off int, v uint32) {
	atomic.AddUint32((*uint32)(unsafe.Pointer(&b[off])), v)
}
