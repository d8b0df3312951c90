package shm

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// TestRingFullThenRoom: a sender fills the peer's FIFO until it refuses
// (ErrNoResource), keeps being refused while nothing is read, and sends
// again as soon as the receiver makes room; every message arrives once,
// in order.
func TestRingFullThenRoom(t *testing.T) {
	rx, _, ep := connectedPair(t)
	var got []uint64
	rx.SetAMHandler(amEcho, func(_ any, data []byte, _ uct.AMFlags) {
		got = append(got, binary.LittleEndian.Uint64(data))
	}, nil)
	sent := uint64(0)
	send := func() error {
		err := ep.AMShort(amEcho, sent, nil)
		if err == nil {
			sent++
		}
		return err
	}
	for send() == nil {
		if sent > 1<<20 {
			t.Fatal("the FIFO never filled")
		}
	}
	cells := sent
	for i := 0; i < 100; i++ {
		if err := send(); !errors.Is(err, uct.ErrNoResource) {
			t.Fatalf("retry %d on a full FIFO: %v, want ErrNoResource", i, err)
		}
	}
	for round := 0; round < 3; round++ {
		// one message read makes room for exactly one
		for len(got) == int(sent-cells) {
			rx.Progress()
		}
		rx.Progress() // hands the delivered cell back
		if err := send(); err != nil {
			t.Fatalf("round %d: send after the receiver made room: %v", round, err)
		}
	}
	for len(got) < int(sent) {
		rx.Progress()
	}
	for i, v := range got {
		if v != uint64(i) {
			t.Fatalf("message %d carries %d", i, v)
		}
	}
}
