package shm

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// TestPutShortViewAgrees: a PutShort through a key's view (the bounds
// and the right to write as two compares against the view's limit)
// accepts and refuses exactly what the full check of a fresh key does,
// at the edges of the memory, below its start, at addresses that wrap,
// for the one-word store, the plain copy and the vector copy, into
// writable and read-only memory, and writes only the bytes it is aimed
// at.
func TestPutShortViewAgrees(t *testing.T) {
	_, a := openIface(t)
	mdB, b := openIface(t)
	ep, err := a.Connect(b.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	for _, acc := range []uct.Access{uct.AccessAll, uct.AccessRemoteRead} {
		m, warm := allocKey(t, mdB, acc)
		base, mem := m.Address(), m.Bytes()
		size := uint64(len(mem))
		// A get makes the view of read-only memory; a put, that of writable memory.
		if err := ep.GetBcopy(make([]byte, 1), base, warm, nil); err != nil {
			t.Fatalf("access %#x: get making the view: %v", acc, err)
		}
		for _, n := range []uint64{0, 1, 8, 100, 200, 256} {
			for _, raddr := range []uint64{base, base + size - n, base + size - n + 1, base + size, base + size + 1,
				base - 1, base - n, ^uint64(0), ^uint64(0) - n + 1} {
				name := fmt.Sprintf("access %#x, %d bytes at base%+d", acc, n, int64(raddr-base))
				fresh, err := mdB.UnpackRKey(m.PackRKey())
				if err != nil {
					t.Fatal(err)
				}
				buf := bytes.Repeat([]byte{byte(n) | 0x80}, int(n))
				for i := range mem {
					mem[i] = 0
				}
				want := ep.PutShort(buf, raddr, fresh) // no view: the full check
				fresh.Close()
				full := bytes.Clone(mem)
				for i := range mem {
					mem[i] = 0
				}
				got := ep.PutShort(buf, raddr, warm)
				if (got == nil) != (want == nil) || (got != nil && !errors.Is(got, uct.ErrRemoteProtection)) {
					t.Fatalf("%s: through the view %v, full check %v", name, got, want)
				}
				if !bytes.Equal(mem, full) {
					t.Fatalf("%s: the view's put left other memory than the full check's", name)
				}
				if want == nil && n > 0 && !bytes.Equal(mem[raddr-base:raddr-base+n], buf) {
					t.Fatalf("%s: accepted but the bytes did not land", name)
				}
			}
		}
	}
}
