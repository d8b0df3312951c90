package shm

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// publishBadLength writes one cell into the peer's FIFO whose length word
// claims 1 MiB, far past the bcopy buffer, and publishes it.
func publishBadLength(ep *Endpoint) error {
	t, ok := ep.tx.reserve(ep.it.me)
	if !ok {
		return fmt.Errorf("parent FIFO full")
	}
	ep.sealCell(ep.tx.cell(t), 1<<20, amEcho)
	ep.tx.publish(t)
	return nil
}

// TestBadLengthDropped: a peer that publishes a cell with a length beyond
// the bcopy buffer neither crashes the receiver nor gets the cell
// delivered; the receiver counts it, reports EventCorruptPacket with
// ErrDataCorrupt, and goes on receiving from that peer.
func TestBadLengthDropped(t *testing.T) {
	_, it := openIface(t)
	var got [][]byte
	it.SetAMHandler(amEcho, func(_ any, data []byte, _ uct.AMFlags) {
		got = append(got, append([]byte(nil), data...))
	}, nil)
	c := startChild(t, "badlen")
	ep := c.connect(t, it)
	defer func() {
		sendRetry(t, it, func() error { return ep.AMShort(amQuit, 0, nil) })
		ep.Close()
	}()
	self := it.(*Iface)
	progressUntil(t, it, "the bad cell", func() bool { return self.BadCells() == 1 })
	if len(got) != 0 {
		t.Fatalf("delivered %d messages from the bad cell", len(got))
	}
	ev, err := it.Events().Get(timeoutCtx(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != uct.EventCorruptPacket || !errors.Is(ev.Err, uct.ErrDataCorrupt) {
		t.Fatalf("event %v, want corrupt packet wrapping ErrDataCorrupt", ev)
	}
	t.Logf("event: %v", ev.Err)
	ev.Ack()

	msg := []byte("after the bad cell")
	sendRetry(t, it, func() error { _, err := ep.AMBcopy(amEcho, msg, nil); return err })
	progressUntil(t, it, "the echo", func() bool { return len(got) == 1 })
	if string(got[0]) != string(msg) {
		t.Fatalf("echo %q, want %q", got[0], msg)
	}
}

// FuzzCellHeader publishes cells with arbitrary length and id words into
// a real FIFO: the receiver delivers those within the bcopy buffer whole
// to the id's handler and drops the others, never panicking.
func FuzzCellHeader(f *testing.F) {
	for _, s := range []struct {
		ln uint32
		id uint8
	}{{0, amEcho}, {8, amEcho}, {inlineMax, amEcho}, {inlineMax + 1, amEcho}, {bufSize, amEcho}, {bufSize + 1, amEcho}, {1<<32 - 1, 0xff}} {
		f.Add(s.ln, s.id)
	}
	b, _, ep := connectedPair(f)
	rx := b.(*Iface)
	var got []int
	for id := uint8(0); id <= uct.MaxAMID; id++ {
		b.SetAMHandler(id, func(_ any, data []byte, _ uct.AMFlags) { got = append(got, len(data)) }, nil)
	}
	f.Fuzz(func(t *testing.T, ln uint32, id uint8) {
		got = got[:0]
		bad := rx.BadCells()
		c, ok := ep.tx.reserve(ep.it.me)
		if !ok {
			t.Fatal("FIFO full")
		}
		ep.sealCell(ep.tx.cell(c), int(ln), id)
		ep.tx.publish(c)
		if n := b.Progress(); n != 1 {
			t.Fatalf("Progress handled %d cells, want 1", n)
		}
		for {
			ev, ok := b.Events().TryGet()
			if !ok {
				break
			}
			ev.Ack()
		}
		if ln > bufSize {
			if len(got) != 0 || rx.BadCells() != bad+1 {
				t.Fatalf("length %d: delivered %v, bad cells %d -> %d", ln, got, bad, rx.BadCells())
			}
			return
		}
		if len(got) != 1 || got[0] != int(ln) || rx.BadCells() != bad {
			t.Fatalf("length %d: delivered %v, bad cells %d -> %d", ln, got, bad, rx.BadCells())
		}
	})
}
