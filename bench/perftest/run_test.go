package main

import (
	"testing"

	"github.com/ucgo/ucgo/internal/tsc"
)

// A side's meter is calibrated when the side is made, before the first
// barrier, so that no side spins through the calibration between a
// barrier and its measured phase.
func TestSideCalibratedWhenMade(t *testing.T) {
	for _, test := range []string{"am_bw", "tag_bw"} {
		cfg := &config{Test: test, Transport: "shm", Sizes: []int{8}, Iters: 10, Window: 16, ErrMode: "none", Wait: "poll", CPU: -1}
		td, err := checkRunnable(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, initiator := range []bool{true, false} {
			s, err := newSide(cfg, td, initiator)
			if err != nil {
				t.Fatal(err)
			}
			if s.timer().conv == (tsc.Converter{}) {
				t.Errorf("%s (initiator %v): the meter is not calibrated when the side is made", test, initiator)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
