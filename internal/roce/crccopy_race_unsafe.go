//go:build amd64 && race

package roce

import (
	"runtime"
	"unsafe"
)

const raceBuild = true

// raceCopy tells the race detector of the read of src and the write of
// dst that foldCopyAVX2 makes in assembly, which it does not see.
func raceCopy(dst, src []byte) {
	runtime.RaceReadRange(unsafe.Pointer(unsafe.SliceData(src)), len(src))
	runtime.RaceWriteRange(unsafe.Pointer(unsafe.SliceData(dst)), len(src))
}
