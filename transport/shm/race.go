//go:build race

package shm

// raceBuild: the race detector is on.
const raceBuild = true
