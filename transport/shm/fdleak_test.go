package shm

import (
	"testing"

	"github.com/ucgo/ucgo/internal/fd"
	"github.com/ucgo/ucgo/uct"
)

// TestCloseLeaksNoDescriptor: a round of MDs, ifaces, endpoints both ways,
// allocated memory, a remote key and an RMA, all closed, leaves no
// descriptor open.
func TestCloseLeaksNoDescriptor(t *testing.T) {
	round := func() {
		mdA, err := New().OpenMD(uct.MDParams{})
		if err != nil {
			t.Fatal(err)
		}
		mdB, err := New().OpenMD(uct.MDParams{})
		if err != nil {
			t.Fatal(err)
		}
		a, err := mdA.OpenIface(uct.IfaceParams{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := mdB.OpenIface(uct.IfaceParams{})
		if err != nil {
			t.Fatal(err)
		}
		ab, err := a.Connect(b.Address(), uct.EPParams{})
		if err != nil {
			t.Fatal(err)
		}
		ba, err := b.Connect(a.Address(), uct.EPParams{})
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
		if err := ab.PutShort([]byte("leak"), mem.Address(), rk); err != nil {
			t.Fatal(err)
		}
		if err := ab.AMShort(1, 7, []byte("x")); err != nil {
			t.Fatal(err)
		}
		b.Progress()
		for _, c := range []interface{ Close() error }{rk, mem, ab, ba, a, b, mdA, mdB} {
			if err := c.Close(); err != nil {
				t.Errorf("close %T: %v", c, err)
			}
		}
	}
	fd.CheckRounds(t, "closed objects", round)
}
