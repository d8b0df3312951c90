package verbs

import (
	"testing"

	"github.com/ucgo/ucgo/internal/netns"
)

// openIn opens a device on ns's address from inside ns (own port, no
// background progress), closed when the test ends.
func openIn(t *testing.T, ns *netns.NS) *Device {
	t.Helper()
	var d *Device
	if err := ns.Do(func() (err error) {
		d, err = Open(Config{Addr: ns.Addr(), Port: -1, ProgressInterval: -1})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
