package netns_test

import (
	"testing"

	"github.com/ucgo/ucgo/internal/netns"
)

// Two hosts with two NICs each, every NIC cabled to a switch of its own:
// taking host A's first NIC down leaves host B's link on that rail up, so
// B learns of it only from A (or from its own failing traffic).
func ExampleNewSwitchedRails() {
	test := func(t *testing.T) {
		r, err := netns.NewSwitchedRails(t, 2) // skips unless root; cleaned up by t.Cleanup
		if err != nil {
			t.Fatal(err)
		}
		// ... run a process in r.B[0].Command and talk to it from r.A[0].Do, then:
		if err := r.A[0].SetLink(false); err != nil {
			t.Fatal(err)
		}
	}
	_ = test
}
