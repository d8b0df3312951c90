package ucp

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

const amHostile = 5

// amSink installs a handler for amHostile that records each message's
// data and whether its reply endpoint is healthy.
type amSink struct {
	msgs [][]byte
	bad  int
}

func newAMSink(w *Worker) *amSink {
	s := &amSink{}
	w.SetAMHandler(amHostile, func(m *AMMessage) {
		s.msgs = append(s.msgs, append([]byte(nil), m.Data...))
		if m.Reply == nil || m.Reply.Err() != nil {
			s.bad++
		}
	})
	return s
}

// sendFrags sends data as one fragmented user AM of message mid.
func (p *rawPeer) sendFrags(mid uint64, data []byte, fragLen int) {
	for off := 0; off < len(data); off += fragLen {
		end := min(off+fragLen, len(data))
		p.send(amUserFrag, p.frag(p.dst, amHostile, mid, uint64(len(data)), uint64(off), nil, data[off:end]))
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// A 56-byte first fragment announcing a 1 GiB active message takes no
// memory; the message fails with a count and an event, and the endpoint
// carries the next messages.
func TestReassemblyAnnouncedSize(t *testing.T) {
	w := hostileWorker(t, Config{})
	sink := newAMSink(w)
	var drops []DropEvent
	w.SetDropHandler(func(e DropEvent) { drops = append(drops, e) })
	p := newRawPeer(t, w)
	before := heapInUse()
	for mid := uint64(1); mid <= 4; mid++ {
		f := p.frag(p.dst, amHostile, mid, 1<<30, 0, nil, make([]byte, 56-userFragHdr))
		if len(f) != 56 {
			t.Fatalf("fragment of %d bytes", len(f))
		}
		p.send(amUserFrag, f)
	}
	p.settle()
	if grew := int64(heapInUse()) - int64(before); grew > 64<<20 {
		t.Fatalf("heap grew by %d MiB after four 56-byte fragments", grew>>20)
	}
	if n := w.Stats().AMReassemblyDrops; n != 4 {
		t.Errorf("AMReassemblyDrops = %d, want 4", n)
	}
	if len(drops) != 4 {
		t.Fatalf("%d drop events, want 4", len(drops))
	}
	for _, e := range drops {
		if e.Reason != DropReassemblyLimit || e.Endpoint == nil || e.Length != 1<<30 || !errors.Is(e.Err, uct.ErrNoMemory) {
			t.Errorf("drop event %+v", e)
		}
	}
	// The endpoint lives on: one-fragment and fragmented messages arrive.
	p.send(amUser, user(p.dst, amHostile, nil, []byte("hello")))
	big := pattern(20000, 4)
	p.sendFrags(9, big, 7000)
	p.progressUntil("two messages", func() bool { return len(sink.msgs) == 2 })
	if string(sink.msgs[0]) != "hello" || !bytes.Equal(sink.msgs[1], big) || sink.bad != 0 {
		t.Fatalf("messages after the drops: %q, %d bytes, %d on a failed endpoint", sink.msgs[0], len(sink.msgs[1]), sink.bad)
	}
}

// Memory is charged as fragments arrive: a message that outgrows the
// per-peer limit fails when it crosses it, one that would take the
// worker past its limit fails while other peers' messages complete.
func TestReassemblyLimits(t *testing.T) {
	w := hostileWorker(t, Config{AMReassemblyPeerMax: 1 << 20, AMReassemblyMax: 3 << 19})
	sink := newAMSink(w)
	var drops []DropEvent
	w.SetDropHandler(func(e DropEvent) { drops = append(drops, e) })
	p1, p2 := newRawPeer(t, w), newRawPeer(t, w)

	// Memory follows the fragments: the first 8000 bytes of p1's 1 MiB
	// message take 64 KiB.
	m1, m2 := pattern(1<<20, 2), pattern(1<<20, 3)
	p1.send(amUserFrag, p1.frag(p1.dst, amHostile, 2, uint64(len(m1)), 0, nil, m1[:8000]))
	p1.settle()
	w.lock()
	held := w.drops.asmBytes
	w.unlock()
	if held != reasmFirst {
		t.Fatalf("%d bytes charged after the first fragment of 8000 bytes, want %d", held, reasmFirst)
	}
	for off := 8000; off < 600*8000/8; off += 8000 {
		p1.send(amUserFrag, p1.frag(p1.dst, amHostile, 2, uint64(len(m1)), uint64(off), nil, m1[off:min(off+8000, len(m1))]))
	}
	p1.settle()
	// Per peer: p1 holds 1 MiB for its first message, so a second one
	// fails at its first fragment; its later fragments go nowhere.
	p1.send(amUserFrag, p1.frag(p1.dst, amHostile, 7, 1000, 0, nil, make([]byte, 500)))
	p1.settle()
	if len(drops) != 1 {
		t.Fatalf("%d drops after p1 exceeded its limit, want 1", len(drops))
	}
	p1.send(amUserFrag, p1.frag(p1.dst, amHostile, 7, 1000, 500, nil, make([]byte, 500)))
	p1.settle()
	// Per worker: p2's 1 MiB message cannot also fit in 1.5 MiB.
	for off := 0; off < len(m2) && len(drops) == 1; off += 8000 {
		p2.send(amUserFrag, p2.frag(p2.dst, amHostile, 1, uint64(len(m2)), uint64(off), nil, m2[off:min(off+8000, len(m2))]))
		p2.settle()
	}
	if len(drops) != 2 || drops[1].Endpoint == drops[0].Endpoint {
		t.Fatalf("%d drops (want 2, the second from the other peer)", len(drops))
	}
	for off := 600 * 8000 / 8; off < len(m1); off += 8000 {
		p1.send(amUserFrag, p1.frag(p1.dst, amHostile, 2, uint64(len(m1)), uint64(off), nil, m1[off:min(off+8000, len(m1))]))
	}
	p1.sendFrags(3, []byte("after"), 100) // a new message of p1 after its failed one
	p1.progressUntil("p1's messages", func() bool { return len(sink.msgs) == 2 })
	if !bytes.Equal(sink.msgs[0], m1) || string(sink.msgs[1]) != "after" {
		t.Fatalf("p1's messages: %d bytes and %q", len(sink.msgs[0]), sink.msgs[1])
	}
	// p2 goes on, now that the memory is back.
	m3 := pattern(600<<10, 5)
	p2.sendFrags(2, m3, 8000)
	p2.progressUntil("p2's message", func() bool { return len(sink.msgs) == 3 })
	if !bytes.Equal(sink.msgs[2], m3) || sink.bad != 0 {
		t.Fatal("p2's message after its failed one differs")
	}
	if n := w.Stats().AMReassemblyDrops; n != 2 {
		t.Errorf("AMReassemblyDrops = %d, want 2", n)
	}
	w.lock()
	held = w.drops.asmBytes
	w.unlock()
	if held != 0 {
		t.Errorf("%d bytes of reassembly memory still charged", held)
	}
}

// An eager tag message in fragments that fails its reassembly is
// reported as a tag message, and the endpoint carries the next one.
func TestReassemblyTagMessageReport(t *testing.T) {
	w := hostileWorker(t, Config{})
	var drops []DropEvent
	w.SetDropHandler(func(e DropEvent) { drops = append(drops, e) })
	p := newRawPeer(t, w)
	tag := le.AppendUint64(nil, 77)
	p.send(amTagFrag, p.frag(p.dst, 0, 1, 1<<30, 0, tag, make([]byte, 64)))
	p.settle()
	if len(drops) != 1 {
		t.Fatalf("%d drop events, want 1", len(drops))
	}
	e := drops[0]
	if e.Reason != DropReassemblyLimit || e.Length != 1<<30 || !errors.Is(e.Err, uct.ErrNoMemory) || !strings.Contains(e.Err.Error(), "tag message") {
		t.Fatalf("drop event %+v (%v), want a tag message's reassembly failure", e, e.Err)
	}
	if n := w.Stats().AMReassemblyDrops; n != 1 {
		t.Errorf("AMReassemblyDrops = %d, want 1", n)
	}
	msg := pattern(3000, 5)
	p.send(amTagFrag, p.frag(p.dst, 0, 2, uint64(len(msg)), 0, tag, msg[:1000]))
	p.send(amTagFrag, p.frag(p.dst, 0, 2, uint64(len(msg)), 1000, nil, msg[1000:]))
	buf := make([]byte, len(msg))
	r := w.TagRecv(buf, 77, ^uint64(0), nil)
	p.progressUntil("the next tag message", r.Done)
	if r.Err() != nil || !bytes.Equal(buf, msg) {
		t.Fatalf("next tag message: %v, intact %v", r.Err(), bytes.Equal(buf, msg))
	}
}
