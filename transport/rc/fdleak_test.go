package rc

import (
	"errors"
	"testing"

	"github.com/ucgo/ucgo/internal/fd"
	"github.com/ucgo/ucgo/uct"
)

// TestCloseLeaksNoDescriptor: a round of two MDs on 127.0.0.1, an iface
// each, a connected endpoint, a message and an RMA, all closed, leaves no
// descriptor open.
func TestCloseLeaksNoDescriptor(t *testing.T) {
	round := func() {
		mdA, mdB := openLoopMD(t), openLoopMD(t)
		a, b := openLoopIface(t, mdA), openLoopIface(t, mdB)
		ep, err := a.Connect(b.Address(), uct.EPParams{Timeout: 10e9})
		if err != nil {
			t.Fatal(err)
		}
		mem, err := mdB.Alloc(4096, uct.AccessLocalWrite|uct.AccessRemoteRead|uct.AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		rk, err := mdA.UnpackRKey(mem.PackRKey())
		if err != nil {
			t.Fatal(err)
		}
		if err := ep.PutShort([]byte("leak"), mem.Address(), rk); err != nil && !errors.Is(err, uct.ErrNoResource) {
			t.Fatal(err)
		}
		a.Progress()
		b.Progress()
		for _, c := range []interface{ Close() error }{rk, mem, ep, a, b, mdA, mdB} {
			if err := c.Close(); err != nil {
				t.Errorf("close %T: %v", c, err)
			}
		}
	}
	fd.CheckRounds(t, "closed objects", round)
}
