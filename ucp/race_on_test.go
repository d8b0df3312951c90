//go:build race

package ucp

// raceEnabled: the tests run under the race detector.
const raceEnabled = true
