//go:build linux && amd64 && !race

package shm

// raceBuild: the race detector is on (putcopy_race_unsafe.go).
const raceBuild = false

// raceCopy annotates copyVec's copy for the race detector; it is only
// called in race builds.
func raceCopy(w, buf []byte) {}
