package shm

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// TestAMBcopyParts: AMBcopy delivers header and payload as one message,
// byte for byte, for headers of 0 to 64 bytes (8 bytes the common one)
// and payloads on both sides of each copy boundary: the cell's inline
// room, the vector copy's 129 to 256 bytes and the buffer's size. It
// refuses a bad id and an oversized message, and a closed endpoint.
func TestAMBcopyParts(t *testing.T) {
	rx, _, ep := connectedPair(t)
	var got [][]byte
	rx.SetAMHandler(amEcho, func(_ any, d []byte, _ uct.AMFlags) { got = append(got, append([]byte(nil), d...)) }, nil)
	var want [][]byte
	for _, h := range []int{0, 3, 8, 64} {
		for _, total := range []int{h, inlineMax - 1, inlineMax, inlineMax + 1, 128, 129, 200, 256, 257, 4096, bufSize - 1, bufSize} {
			if total < h {
				continue
			}
			msg := make([]byte, total)
			for i := range msg {
				msg[i] = byte(total*7 + h*13 + i)
			}
			want = append(want, msg)
			n, err := ep.AMBcopy(amEcho, msg[:h], msg[h:])
			if err != nil || n != total {
				t.Fatalf("header %d, %d bytes: AMBcopy = %d, %v", h, total, n, err)
			}
			progressUntil(t, rx, "the message", func() bool { return len(got) == len(want) })
		}
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("message %d (%d bytes): got %x, want %x", i, len(want[i]), got[i], want[i])
		}
	}
	hdr := make([]byte, 8)
	if _, err := ep.AMBcopy(uct.MaxAMID+1, hdr, nil); !errors.Is(err, uct.ErrInvalidParam) {
		t.Fatalf("bad id: %v, want ErrInvalidParam", err)
	}
	if _, err := ep.AMBcopy(amEcho, hdr, make([]byte, bufSize-7)); !errors.Is(err, uct.ErrInvalidParam) {
		t.Fatalf("%d bytes: %v, want ErrInvalidParam", bufSize+1, err)
	}
	ep.Close()
	if _, err := ep.AMBcopy(amEcho, hdr, nil); !errors.Is(err, uct.ErrClosed) {
		t.Fatalf("closed endpoint: %v, want ErrClosed", err)
	}
	if rx.Progress() != 0 || len(got) != len(want) {
		t.Fatalf("%d messages delivered, want %d", len(got), len(want))
	}
}

// TestAMSendPeerDisabled: AMBcopy and AMShort to an iface whose device is
// down fail with ErrRemoteNICFailed and deliver nothing; once it is up
// again, a new endpoint's messages arrive.
func TestAMSendPeerDisabled(t *testing.T) {
	rx, tx, ep := connectedPair(t)
	rx.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	tx.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	got := 0
	rx.SetAMHandler(amEcho, func(any, []byte, uct.AMFlags) { got++ }, nil)
	if err := rx.(*Iface).SetDeviceStatus(uct.DeviceDown); err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, 8)
	if _, err := ep.AMBcopy(amEcho, hdr, make([]byte, 248)); !errors.Is(err, uct.ErrRemoteNICFailed) {
		t.Fatalf("AMBcopy to a disabled iface: %v, want ErrRemoteNICFailed", err)
	}
	if err := ep.AMShort(amEcho, 1, nil); !errors.Is(err, uct.ErrRemoteNICFailed) {
		t.Fatalf("AMShort to a disabled iface: %v, want ErrRemoteNICFailed", err)
	}
	if err := rx.(*Iface).SetDeviceStatus(uct.DeviceUp); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		rx.Progress()
	}
	if got != 0 {
		t.Fatalf("%d messages delivered from a disabled device's senders", got)
	}
	ep2, err := tx.Connect(rx.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer ep2.Close()
	if _, err := ep2.AMBcopy(amEcho, hdr, make([]byte, 248)); err != nil {
		t.Fatalf("AMBcopy after the device came back: %v", err)
	}
	if err := ep2.AMShort(amEcho, 2, nil); err != nil {
		t.Fatalf("AMShort after the device came back: %v", err)
	}
	progressUntil(t, rx, "two messages", func() bool { return got == 2 })
}
