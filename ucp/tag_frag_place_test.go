package ucp

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// placeRig is a worker and a raw peer that sends it eager tag messages
// in fragments, with the worker's endpoint for the peer.
type placeRig struct {
	t  *testing.T
	w  *Worker
	p  *rawPeer
	ep *Endpoint
}

func newPlaceRig(t *testing.T, cfg Config) *placeRig {
	t.Helper()
	g := &placeRig{t: t, w: hostileWorker(t, cfg)}
	g.p = newRawPeer(t, g.w)
	g.w.lock()
	g.ep = g.w.epByID(g.p.dst)
	g.w.unlock()
	if g.ep == nil {
		t.Fatal("no endpoint for the raw peer")
	}
	return g
}

// tagFrag sends one fragment of tag message mid (the tag rides on the
// fragment at offset 0).
func (g *placeRig) tagFrag(mid uint64, tag uint64, total, off uint64, data []byte) {
	var hdr []byte
	if off == 0 {
		hdr = le.AppendUint64(nil, tag)
	}
	g.p.send(amTagFrag, g.p.frag(g.p.dst, 0, mid, total, off, hdr, data))
}

// charged returns the reassembly memory charged to the worker and to the
// raw peer's endpoint, and the partial messages held.
func (g *placeRig) charged() (worker, peer, partial int) {
	g.w.lock()
	defer g.w.unlock()
	return g.w.drops.asmBytes, g.ep.asmBytes, g.w.amFrags.Len()
}

// guarded returns a receive buffer of n bytes inside a larger slice
// whose bytes around it are 0xa5, and a check that they still are.
func guarded(t *testing.T, n int) ([]byte, func()) {
	const g = 64
	all := bytes.Repeat([]byte{0xa5}, n+2*g)
	return all[g : g+n : g+n], func() {
		t.Helper()
		for i, b := range all {
			if (i < g || i >= g+n) && b != 0xa5 {
				t.Fatalf("byte %d outside the receive buffer written (0x%02x)", i-g, b)
			}
		}
	}
}

// counted returns Params whose callback counts the request's completions.
func counted() (*Params, *int) {
	n := new(int)
	return &Params{Callback: func(*Request) { *n++ }}, n
}

// An expected tag message in fragments is matched at its first fragment
// and placed into the receive's buffer without an assembly buffer: no
// reassembly memory is charged while it arrives, and it arrives intact.
func TestTagFragPlaced(t *testing.T) {
	g := newPlaceRig(t, Config{})
	msg := pattern(10000, 3)
	buf, check := guarded(t, len(msg)+100)
	r := g.w.TagRecv(buf, 41, exact, nil)
	g.tagFrag(1, 41, uint64(len(msg)), 0, msg[:4000])
	g.p.settle()
	if w, p, n := g.charged(); w != 0 || p != 0 || n != 1 {
		t.Fatalf("after the first fragment: %d bytes charged to the worker, %d to the peer, %d partial messages; want 0, 0, 1", w, p, n)
	}
	if r.Done() {
		t.Fatal("receive done after the first fragment")
	}
	g.tagFrag(1, 0, uint64(len(msg)), 4000, msg[4000:8000])
	g.p.settle()
	if w, p, _ := g.charged(); w != 0 || p != 0 {
		t.Fatalf("after the second fragment: %d bytes charged to the worker, %d to the peer; want 0", w, p)
	}
	g.tagFrag(1, 0, uint64(len(msg)), 8000, msg[8000:])
	g.p.progressUntil("the placed message", r.Done)
	if err := r.Err(); err != nil {
		t.Fatalf("placed message: %v", err)
	}
	if in := r.Info(); in.Length != len(msg) || in.Tag != 41 || in.Sender != g.ep {
		t.Fatalf("info %+v, want length %d, tag 41, the raw peer's endpoint", in, len(msg))
	}
	if !bytes.Equal(buf[:len(msg)], msg) {
		t.Fatal("placed message differs")
	}
	check()
	if _, _, n := g.charged(); n != 0 {
		t.Fatalf("%d partial messages left", n)
	}
	// Unexpected: assembled, then matched by the receive posted later.
	g.tagFrag(2, 42, uint64(len(msg)), 0, msg[:5000])
	g.tagFrag(2, 0, uint64(len(msg)), 5000, msg[5000:])
	g.p.settle()
	in := make([]byte, len(msg))
	r2 := g.w.TagRecv(in, 42, exact, nil)
	if !r2.Done() || r2.Err() != nil || !bytes.Equal(in, msg) {
		t.Fatalf("unexpected message: done %v err %v intact %v", r2.Done(), r2.Err(), bytes.Equal(in, msg))
	}
}

// An expected message longer than the receive buffer fills the buffer,
// writes nothing beyond it, and completes once, after its last fragment,
// with a *TruncatedError naming both lengths.
func TestTagFragPlacedTruncated(t *testing.T) {
	g := newPlaceRig(t, Config{})
	msg := pattern(9000, 7)
	for _, n := range []int{0, 100, 4000, 4001, 8999} {
		buf, check := guarded(t, n)
		p, calls := counted()
		r := g.w.TagRecv(buf, 50, exact, p)
		for off := 0; off < len(msg); off += 3000 {
			if r.Done() {
				t.Fatalf("buffer %d: done before the fragment at %d", n, off)
			}
			g.tagFrag(uint64(10+n), 50, uint64(len(msg)), uint64(off), msg[off:off+3000])
			g.p.settle()
		}
		g.p.progressUntil("the truncated message", func() bool { return *calls > 0 })
		var te *TruncatedError
		if err := r.Err(); !errors.As(err, &te) || !errors.Is(err, uct.ErrMessageTruncated) || te.Length != len(msg) || te.Buffer != n {
			t.Fatalf("buffer %d: %v, want a *TruncatedError of %d to %d", n, err, len(msg), n)
		}
		if r.Info().Length != len(msg) {
			t.Fatalf("buffer %d: Info().Length %d, want %d", n, r.Info().Length, len(msg))
		}
		if !bytes.Equal(buf, msg[:n]) {
			t.Fatalf("buffer %d: the part that fits differs", n)
		}
		check()
		g.p.settle()
		if *calls != 1 {
			t.Fatalf("buffer %d: %d completions", n, *calls)
		}
		r.Release()
	}
}

// A peer that lies in the middle of a placed message (an offset out of
// order, another total, a fragment past the announced length, an active
// message's fragment naming its id) ends it: the receive completes once
// with uct.ErrDataCorrupt, nothing is written outside its buffer, later
// fragments of it are dropped, and the endpoint carries the next
// message.
func TestTagFragPlacedLies(t *testing.T) {
	g := newPlaceRig(t, Config{})
	g.w.SetAMHandler(amHostile, func(*AMMessage) { t.Error("an active message was delivered") })
	msg := pattern(6000, 9)
	lies := []struct {
		name string
		send func(mid uint64)
	}{
		{"offset ahead", func(mid uint64) { g.tagFrag(mid, 0, 6000, 3500, msg[3500:]) }},
		{"offset back", func(mid uint64) { g.tagFrag(mid, 0, 6000, 1000, msg[1000:4000]) }},
		{"other total", func(mid uint64) { g.tagFrag(mid, 0, 7000, 3000, msg[3000:]) }},
		{"past the end", func(mid uint64) { g.tagFrag(mid, 0, 6000, 3000, pattern(3001, 1)) }},
		{"active message", func(mid uint64) {
			g.p.send(amUserFrag, g.p.frag(g.p.dst, amHostile, mid, 6000, 3000, nil, msg[3000:]))
		}},
	}
	for i, lie := range lies {
		mid := uint64(100 + i)
		buf, check := guarded(t, len(msg))
		p, calls := counted()
		r := g.w.TagRecv(buf, 60, exact, p)
		g.tagFrag(mid, 60, 6000, 0, msg[:3000])
		g.p.settle()
		lie.send(mid)
		g.p.progressUntil(lie.name, func() bool { return *calls > 0 })
		if err := r.Err(); !errors.Is(err, uct.ErrDataCorrupt) {
			t.Fatalf("%s: %v, want uct.ErrDataCorrupt", lie.name, err)
		}
		// the rest of the message finds nothing
		g.tagFrag(mid, 0, 6000, 3000, msg[3000:])
		g.p.settle()
		check()
		if *calls != 1 {
			t.Fatalf("%s: %d completions", lie.name, *calls)
		}
		if w, pc, n := g.charged(); w != 0 || pc != 0 || n != 0 {
			t.Fatalf("%s: charged %d/%d, %d partial messages", lie.name, w, pc, n)
		}
		r.Release()
		in := make([]byte, len(msg))
		next := g.w.TagRecv(in, 61, exact, nil)
		g.tagFrag(mid+50, 61, 6000, 0, msg[:3000])
		g.tagFrag(mid+50, 0, 6000, 3000, msg[3000:])
		g.p.progressUntil("the next message", next.Done)
		if next.Err() != nil || !bytes.Equal(in, msg) {
			t.Fatalf("%s: next message: %v, intact %v", lie.name, next.Err(), bytes.Equal(in, msg))
		}
		next.Release()
	}
	if err := g.ep.Err(); err != nil {
		t.Fatalf("endpoint failed: %v", err)
	}
}

// Fragments of an active message and of a tag message that share a
// message id do not make one message: a tag fragment that would
// complete an active message's assembly loses it, as an active
// message's fragment that would complete a tag message's does.
func TestTagFragKindMismatch(t *testing.T) {
	g := newPlaceRig(t, Config{})
	sink := newAMSink(g.w)
	msg := pattern(200, 1)
	// an active message's first fragment (header empty), a tag fragment
	// for the rest
	g.p.send(amUserFrag, g.p.frag(g.p.dst, amHostile, 7, 200, 0, nil, msg[:100]))
	g.tagFrag(7, 0, 200, 100, msg[100:])
	// a tag message's first fragment (unexpected), an active message's
	// fragment for the rest
	g.tagFrag(8, 70, 200, 0, msg[:100])
	g.p.send(amUserFrag, g.p.frag(g.p.dst, amHostile, 8, 200, 100, nil, msg[100:]))
	g.p.settle()
	if len(sink.msgs) != 0 {
		t.Fatalf("%d active messages delivered", len(sink.msgs))
	}
	if info, ok := g.w.TagProbe(0, 0); ok {
		t.Fatalf("a tag message was delivered: %+v", info)
	}
	if w, p, n := g.charged(); w != 0 || p != 0 || n != 0 {
		t.Fatalf("charged %d/%d, %d partial messages", w, p, n)
	}
	// and both kinds still arrive
	g.p.sendFrags(9, msg, 100)
	in := make([]byte, len(msg))
	r := g.w.TagRecv(in, 71, exact, nil)
	g.tagFrag(10, 71, 200, 0, msg[:100])
	g.tagFrag(10, 0, 200, 100, msg[100:])
	g.p.progressUntil("both messages", func() bool { return r.Done() && len(sink.msgs) == 1 })
	if r.Err() != nil || !bytes.Equal(in, msg) || !bytes.Equal(sink.msgs[0], msg) {
		t.Fatalf("tag message %v intact %v, active message intact %v", r.Err(), bytes.Equal(in, msg), bytes.Equal(sink.msgs[0], msg))
	}
}

// A placed message whose endpoint fails halfway (the peer closes it)
// completes its receive once, with the endpoint's error, and not as a
// pending notice; fragments that arrive after are dropped. A message
// halfway placed when its endpoint is closed completes with
// uct.ErrCanceled.
func TestTagFragPlacedEndpointFailure(t *testing.T) {
	for _, mode := range []ErrorMode{ErrorModePeer, ErrorModeNone} {
		g := newPlaceRig(t, Config{ErrorMode: mode})
		msg := pattern(9000, 5)
		buf, check := guarded(t, len(msg))
		p, calls := counted()
		r := g.w.TagRecv(buf, 80, exact, p)
		// a wildcard receive that stays posted
		other := g.w.TagRecv(make([]byte, 8), 0, 0, nil)
		g.tagFrag(1, 80, 9000, 0, msg[:3000])
		g.tagFrag(1, 0, 9000, 3000, msg[3000:6000])
		g.p.settle()
		if r.Done() {
			t.Fatalf("mode %v: done before the failure: %v", mode, r.Err())
		}
		g.p.send(amClose, le.AppendUint32(nil, g.p.dst))
		g.p.progressUntil("the receive's failure", func() bool { return *calls > 0 })
		if g.ep.Err() == nil {
			t.Fatalf("mode %v: the endpoint did not fail", mode)
		}
		err := r.Err()
		var pe *PendingError
		if !errors.Is(err, uct.ErrConnectionReset) || errors.As(err, &pe) || !Final(err) {
			t.Fatalf("mode %v: receive completed with %v, want the endpoint's error (connection reset)", mode, err)
		}
		drops := g.w.Stats().FailedDrops.TagEager
		g.tagFrag(1, 0, 9000, 6000, msg[6000:])
		g.p.settle()
		check()
		if *calls != 1 {
			t.Fatalf("mode %v: %d completions", mode, *calls)
		}
		if d := g.w.Stats().FailedDrops.TagEager; d != drops+1 {
			t.Fatalf("mode %v: FailedDrops.TagEager %d -> %d, want one more", mode, drops, d)
		}
		if other.Done() {
			t.Fatalf("mode %v: the wildcard receive completed: %v", mode, other.Err())
		}
		if w, pc, n := g.charged(); w != 0 || pc != 0 || n != 0 {
			t.Fatalf("mode %v: charged %d/%d, %d partial messages", mode, w, pc, n)
		}
		g.w.Purge(g.ep)
		if *calls != 1 {
			t.Fatalf("mode %v: %d completions after Purge", mode, *calls)
		}
	}

	// closed by this side
	g := newPlaceRig(t, Config{})
	msg := pattern(9000, 6)
	buf, check := guarded(t, len(msg))
	p, calls := counted()
	r := g.w.TagRecv(buf, 81, exact, p)
	g.tagFrag(1, 81, 9000, 0, msg[:3000])
	g.p.settle()
	g.ep.Close(CloseForce).Release()
	g.p.progressUntil("the receive's cancel", func() bool { return *calls > 0 })
	if err := r.Err(); !errors.Is(err, uct.ErrCanceled) {
		t.Fatalf("closed endpoint: receive completed with %v, want uct.ErrCanceled", err)
	}
	g.w.Progress()
	check()
	if *calls != 1 {
		t.Fatalf("closed endpoint: %d completions", *calls)
	}
}

// Messages from one peer match receives in the order they were sent,
// whether a message is placed at its first fragment or assembled
// unexpected, and a receive posted while a message is assembling does
// not let a later message overtake it.
func TestTagFragPlacedOrder(t *testing.T) {
	g := newPlaceRig(t, Config{})
	a, b, c := pattern(7000, 1), pattern(50, 2), pattern(7000, 3)
	ins := [][]byte{make([]byte, 7000), make([]byte, 7000), make([]byte, 7000)}
	// r0 posted before a's first fragment; a is placed into it.
	r0 := g.w.TagRecv(ins[0], 90, exact, nil)
	g.tagFrag(1, 90, 7000, 0, a[:4000])
	g.p.settle()
	// r1 posted in the middle of a: b (sent after a) goes to r1, not r0.
	r1 := g.w.TagRecv(ins[1], 90, exact, nil)
	g.tagFrag(1, 0, 7000, 4000, a[4000:])
	var hd [eagerHdr]byte
	putEagerHdr(hd[:], 90, g.p.dst)
	g.p.send(amEager, append(hd[:], b...))
	// c arrives unexpected, in part before r2 is posted
	g.tagFrag(2, 90, 7000, 0, c[:4000])
	g.p.settle()
	r2 := g.w.TagRecv(ins[2], 90, exact, nil)
	g.tagFrag(2, 0, 7000, 4000, c[4000:])
	g.p.progressUntil("three messages", func() bool { return r0.Done() && r1.Done() && r2.Done() })
	for i, want := range [][]byte{a, b, c} {
		r := []*Request{r0, r1, r2}[i]
		if r.Err() != nil || r.Info().Length != len(want) || !bytes.Equal(ins[i][:len(want)], want) {
			t.Fatalf("receive %d: %v, length %d, want message %d of %d bytes", i, r.Err(), r.Info().Length, i, len(want))
		}
	}
}
