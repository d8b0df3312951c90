//go:build linux && amd64 && race

package shm

import (
	"runtime"
	"unsafe"
)

// raceCopy tells the race detector of the read of buf and the write of
// w[:len(buf)] that copyVec makes in assembly, which it does not see.
func raceCopy(w, buf []byte) {
	runtime.RaceReadRange(unsafe.Pointer(unsafe.SliceData(buf)), len(buf))
	runtime.RaceWriteRange(unsafe.Pointer(unsafe.SliceData(w)), len(buf))
}
