//go:build !race

package verbs

// racePosted, raceArrived and raceTouched annotate the network for the
// race detector (race_unsafe.go); they do nothing in other builds.
func racePosted() {}

func raceArrived() {}

func raceTouched() {}
