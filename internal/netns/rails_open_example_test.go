package netns_test

import (
	"errors"
	"fmt"

	"github.com/ucgo/ucgo/internal/netns"
)

// A program (not a test) builds two rails with OpenRails and closes them
// itself; without root it gets ErrNotRoot.
func ExampleOpenRails() {
	r, err := netns.OpenRails(2)
	if errors.Is(err, netns.ErrNotRoot) {
		fmt.Println("needs root")
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	// ... a server in r.B[0].Command, a client inside r.A[0].Do; then
	// take rail 0 down:
	_ = r.A[0].SetLink(false)
}
