//go:build race

package testproc

const raceEnabled = true
