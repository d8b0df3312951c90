package fault_test

import (
	"testing"

	"github.com/ucgo/ucgo/internal/fault"
	"github.com/ucgo/ucgo/internal/netns"
)

// Drop 30 % of RoCEv2 packets arriving in namespace B, then black-hole
// one queue pair mid-test.
func ExampleDrop() {
	test := func(t *testing.T) {
		p, err := netns.NewPair(t)
		if err != nil {
			t.Fatal(err)
		}
		var f *fault.Fault
		err = p.B.Do(func() (err error) {
			f, err = fault.Drop(p.B.Link(), fault.Config{Fraction: 0.3, OnlyUDPPort: fault.RoCEv2Port})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		// ... traffic ...
		qpn := uint32(0x000123)
		if err := f.Set(fault.Config{OnlyUDPPort: fault.RoCEv2Port, OnlyDestQPN: &qpn, BlackHole: true}); err != nil {
			t.Fatal(err)
		}
		seen, dropped := f.Counters()
		t.Logf("%d of %d dropped", dropped, seen)
	}
	_ = test
}
