package rc

import (
	"bytes"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// TestAMZcopyCompletesAtOnce: an AMZcopy is copied into a bounce buffer
// and completes when the call returns, without waiting for the peer's
// ACK; the sender may reuse its buffer at once and the peer still gets
// what was sent.
func TestAMZcopyCompletesAtOnce(t *testing.T) {
	p := loopPair(t)
	defer p.Cleanup()
	a, b := p.A.(*Iface), p.B
	var got [][]byte
	b.SetAMHandler(1, func(_ any, data []byte, _ uct.AMFlags) { got = append(got, bytes.Clone(data)) }, nil)
	ue, err := a.Connect(b.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer ue.Close()
	hdr := []byte("header--")
	for _, n := range []int{0, 100, 4096, a.Attr().AMMaxZcopy - len(hdr)} {
		buf := pattern(n, byte(n))
		want := append(bytes.Clone(hdr), buf...)
		invoked := false
		comp := &uct.Completion{Count: 1, Func: func(*uct.Completion) { invoked = true }}
		deadline := time.Now().Add(20 * time.Second)
		for {
			err = ue.AMZcopy(1, hdr, [][]byte{buf[:n/2], buf[n/2:]}, comp)
			if err != uct.ErrNoResource || time.Now().After(deadline) {
				break
			}
			a.Progress()
			b.Progress()
		}
		if err != nil {
			t.Fatalf("AMZcopy of %d bytes: %v, want it complete at once (nil)", n, err)
		}
		clear(buf) // the sender's buffer is free again
		k := len(got)
		for len(got) == k {
			if time.Now().After(deadline) {
				t.Fatalf("AMZcopy of %d bytes did not arrive", n)
			}
			a.Progress()
			b.Progress()
		}
		if !bytes.Equal(got[k], want) {
			t.Fatalf("AMZcopy of %d bytes: the peer got %d bytes that differ from what was sent", n, len(got[k]))
		}
		if invoked {
			t.Fatalf("AMZcopy of %d bytes returned nil and invoked its completion too", n)
		}
	}
}
