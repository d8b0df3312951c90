package shm

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// TestReceiverOnlyReadsCells: delivering messages, and handing their
// cells back to the senders, leaves every byte of the cells as the
// sender wrote it (a store into a cell would take its cache line from
// the sender's core once per message); the senders still get every cell
// back, round after round, and every message arrives once, in order.
func TestReceiverOnlyReadsCells(t *testing.T) {
	_, rxi := openIface(t)
	_, txi := openIface(t)
	rx := rxi.(*Iface)
	var got []uint64
	rx.SetAMHandler(amBlast, func(_ any, d []byte, _ uct.AMFlags) {
		got = append(got, binary.LittleEndian.Uint64(d))
	}, nil)
	uep, err := txi.Connect(rx.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer uep.Close()
	ep := uep.(*Endpoint)
	cells := uint64(rx.rx.cells)
	region := func() []byte {
		var b []byte
		for i := uint64(0); i < cells; i++ {
			b = append(b, rx.rx.cell(i)...)
		}
		return b
	}
	sent := uint64(0)
	for round := 0; round < 3; round++ {
		// fill all but one cell
		for i := uint64(0); i < cells-1; i++ {
			if err := ep.AMShort(amBlast, sent, []byte("payload")); err != nil {
				t.Fatalf("round %d, message %d: %v", round, i, err)
			}
			sent++
		}
		before := region()
		progressUntil(t, rx, "the round's messages", func() bool { return uint64(len(got)) == sent })
		rx.Progress() // hands the cell delivered last back
		if after := region(); !bytes.Equal(before, after) {
			for i := range before {
				if before[i] != after[i] {
					t.Fatalf("round %d: the receiver changed cell %d (byte %d): %#x, was %#x",
						round, i/cellSize, i%cellSize, after[i], before[i])
				}
			}
		}
	}
	for i, v := range got {
		if v != uint64(i) {
			t.Fatalf("message %d carries %d", i, v)
		}
	}
}
