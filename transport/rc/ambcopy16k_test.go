package rc

import (
	"bytes"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// TestAMBcopy16KOneMessage: a 16 KiB payload with 64 bytes of upper-layer
// headers (ucp's eager tag message) fits one AMBcopy, so ucp sends it as
// one message instead of in fragments; it arrives whole in one handler
// call.
func TestAMBcopy16KOneMessage(t *testing.T) {
	p := loopPair(t)
	defer p.Cleanup()
	a, b := p.A.(*Iface), p.B
	if m := a.Attr().AMMaxBcopy; m < 16<<10+64 {
		t.Fatalf("AMMaxBcopy %d, want room for 16 KiB and 64 bytes of headers", m)
	}
	var got [][]byte
	b.SetAMHandler(2, func(_ any, data []byte, _ uct.AMFlags) { got = append(got, bytes.Clone(data)) }, nil)
	ue, err := a.Connect(b.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer ue.Close()
	hdr := pattern(64, 3)
	buf := pattern(16<<10, 5)
	want := append(bytes.Clone(hdr), buf...)
	deadline := time.Now().Add(20 * time.Second)
	before := a.md.Device().Counters()
	for {
		_, err = ue.AMBcopy(2, hdr, buf)
		if err != uct.ErrNoResource || time.Now().After(deadline) {
			break
		}
		a.Progress()
		b.Progress()
	}
	if err != nil {
		t.Fatalf("AMBcopy of %d+%d bytes: %v", len(hdr), len(buf), err)
	}
	for len(got) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("AMBcopy of %d+%d bytes did not arrive", len(hdr), len(buf))
		}
		a.Progress()
		b.Progress()
	}
	after := a.md.Device().Counters()
	if len(got) != 1 || !bytes.Equal(got[0], want) {
		t.Fatalf("the peer got %d messages (first %d bytes), want one of %d bytes equal to what was sent", len(got), len(got[0]), len(want))
	}
	if n := after.TxPackets - before.TxPackets; n < 5 {
		t.Fatalf("%d packets sent for %d bytes, want at least 5", n, len(want))
	}
}
