package shm

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// connectPair opens two ifaces and connects the first to the second.
func connectPair(t *testing.T) (tx, rx *Iface, ep *Endpoint) {
	t.Helper()
	_, txi := openIface(t)
	_, rxi := openIface(t)
	uep, err := txi.Connect(rxi.(*Iface).Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uep.Close() })
	return txi.(*Iface), rxi.(*Iface), uep.(*Endpoint)
}

// TestProgressDeliversAtMost16: with 40 messages waiting, each Progress
// delivers 16 of them, in order, and the third the last 8.
func TestProgressDeliversAtMost16(t *testing.T) {
	_, rx, ep := connectPair(t)
	var got []uint64
	rx.SetAMHandler(amBlast, func(_ any, d []byte, _ uct.AMFlags) {
		got = append(got, *u64at(d, 0))
	}, nil)
	const sent = 40
	for i := uint64(0); i < sent; i++ {
		if err := ep.AMShort(amBlast, i, nil); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	for call, want := range []int{16, 16, 8, 0} {
		before := len(got)
		n := rx.Progress()
		if d := len(got) - before; d != want || n != want {
			t.Fatalf("Progress %d delivered %d messages and returned %d, want %d", call, d, n, want)
		}
	}
	for i, v := range got {
		if v != uint64(i) {
			t.Fatalf("message %d carries %d", i, v)
		}
	}
}

// TestHandBackOncePerProgress: the cells a Progress delivers are handed
// back together at the start of the next Progress: the ring's freed
// counter does not move while the handlers of one call run, nor when
// the call returns, and the next call moves it past all of them.
func TestHandBackOncePerProgress(t *testing.T) {
	_, rx, ep := connectPair(t)
	var seen []uint64
	rx.SetAMHandler(amBlast, func(any, []byte, uct.AMFlags) {
		seen = append(seen, atomic.LoadUint64(rx.rx.freed))
	}, nil)
	freed := func() uint64 { return atomic.LoadUint64(rx.rx.freed) }
	for round := 0; round < 3; round++ {
		for i := 0; i < 10; i++ {
			if err := ep.AMShort(amBlast, uint64(i), nil); err != nil {
				t.Fatalf("round %d, message %d: %v", round, i, err)
			}
		}
		start := freed()
		seen = seen[:0]
		if n := rx.Progress(); n != 10 {
			t.Fatalf("round %d: Progress delivered %d messages, want 10", round, n)
		}
		for i, f := range seen {
			if f != start {
				t.Fatalf("round %d: the handler of message %d saw freed %d, the call started at %d", round, i, f, start)
			}
		}
		if f := freed(); f != start {
			t.Fatalf("round %d: freed %d after Progress, want %d (handed back on the next call)", round, f, start)
		}
		rx.Progress()
		if f := freed(); f != start+10 {
			t.Fatalf("round %d: freed %d after the next Progress, want %d", round, f, start+10)
		}
	}
}

// TestStreamingSends: a send that follows another on the endpoint with
// nothing handed back by its own iface in between counts as streaming
// (and prefetches); the first send after its iface received and handed
// back a message does not.
func TestStreamingSends(t *testing.T) {
	a, b, ab := connectPair(t)
	uba, err := b.Connect(a.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer uba.Close()
	got := 0
	a.SetAMHandler(amBlast, func(any, []byte, uct.AMFlags) { got++ }, nil)
	ab.streaming() // the endpoint's first send marks where it starts
	for i := 0; i < 3; i++ {
		if !ab.streaming() {
			t.Fatalf("send %d of a stream not streaming", i)
		}
	}
	if err := uba.AMShort(amBlast, 1, nil); err != nil {
		t.Fatal(err)
	}
	progressUntil(t, a, "the answer", func() bool { return got == 1 })
	a.Progress() // hands the answer's cell back
	if ab.streaming() {
		t.Fatal("a send after a receive counted as streaming")
	}
	if !ab.streaming() {
		t.Fatal("the send after that one not streaming")
	}
}

// TestPrefetchOnlyHandedBack: the prefetch of a later cell is allowed
// only for a round whose cell the consumer has handed back, as the
// producer's bound knows it: none past a full ring, and up to the rounds
// freed by the consumer's next hand-back once a send has seen it.
func TestPrefetchOnlyHandedBack(t *testing.T) {
	_, rx, ep := connectPair(t)
	rx.SetAMHandler(amBlast, func(any, []byte, uct.AMFlags) {}, nil)
	cells := uint64(rx.rx.cells)
	sent := uint64(0)
	for ; ; sent++ {
		if err := ep.AMShort(amBlast, sent, nil); err != nil {
			if !errors.Is(err, uct.ErrNoResource) {
				t.Fatal(err)
			}
			break
		}
	}
	if sent != cells {
		t.Fatalf("the ring took %d messages, want %d", sent, cells)
	}
	if !ep.tx.handedBack(cells - 1) {
		t.Fatalf("round %d of the first lap not free", cells-1)
	}
	if ep.tx.handedBack(sent + prefetchAhead - 1) {
		t.Fatalf("round %d free with the ring full", sent+prefetchAhead-1)
	}
	rx.Progress() // delivers deliverMax messages
	rx.Progress() // hands their cells back
	if err := ep.AMShort(amBlast, sent, nil); err != nil {
		t.Fatalf("send after the hand-back: %v", err)
	}
	if last := cells + deliverMax - 1; !ep.tx.handedBack(last) || ep.tx.handedBack(last+1) {
		t.Fatalf("handedBack(%d) %v, handedBack(%d) %v: want true, false",
			last, ep.tx.handedBack(last), last+1, ep.tx.handedBack(last+1))
	}
}
