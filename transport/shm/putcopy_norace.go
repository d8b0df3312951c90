//go:build linux && amd64 && !race

package shm

// raceCopy annotates copyVec's copy for the race detector; it is only
// called in race builds.
func raceCopy(w, buf []byte) {}
