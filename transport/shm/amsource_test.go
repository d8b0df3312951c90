package shm

import (
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// Each sending iface has its own source, the same for all its messages.
func TestAMSource(t *testing.T) {
	_, r := openIface(t)
	_, a := openIface(t)
	_, b := openIface(t)
	var got []uct.AMSource
	if err := r.(uct.AMSourceIface).SetAMSourceHandler(3, func(_ any, data []byte, _ uct.AMFlags, src uct.AMSource) {
		got = append(got, src)
	}, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.(uct.AMSourceIface).SetAMSourceHandler(uct.MaxAMID+1, nil, nil); err == nil {
		t.Fatal("SetAMSourceHandler(MaxAMID+1) succeeded")
	}
	var eps []uct.Endpoint
	for _, s := range []uct.Iface{a, b} {
		ep, err := s.Connect(r.Address(), uct.EPParams{})
		if err != nil {
			t.Fatal(err)
		}
		defer ep.Close()
		eps = append(eps, ep)
	}
	for i := 0; i < 2; i++ {
		for _, ep := range eps {
			sendRetry(t, r, func() error { return ep.AMShort(3, 1, nil) })
			sendRetry(t, r, func() error { _, err := ep.AMBcopy(3, make([]byte, 500), nil); return err })
		}
	}
	progressUntil(t, r, "8 messages", func() bool { return len(got) == 8 })
	for i := 0; i < 8; i += 4 {
		if got[i] != got[i+1] || got[i+2] != got[i+3] || got[i] == got[i+2] {
			t.Fatalf("sources %x: want one per sender, distinct", got)
		}
	}
	if got[0] != got[4] {
		t.Fatalf("sources %x: changed between rounds", got)
	}
	// SetAMHandler replaces the source handler.
	plain := 0
	r.SetAMHandler(3, func(any, []byte, uct.AMFlags) { plain++ }, nil)
	sendRetry(t, r, func() error { return eps[0].AMShort(3, 1, nil) })
	progressUntil(t, r, "plain handler", func() bool { return plain == 1 })
	if len(got) != 8 {
		t.Fatal("source handler still called")
	}
}
