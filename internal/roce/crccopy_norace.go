//go:build amd64 && !race

package roce

const raceBuild = false

// raceCopy annotates foldCopyAVX2's copy for the race detector; it is
// only called in race builds.
func raceCopy(dst, src []byte) {}
