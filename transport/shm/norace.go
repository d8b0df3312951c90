//go:build !race

package shm

// raceBuild: the race detector is on (race.go).
const raceBuild = false
