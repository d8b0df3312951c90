package ucp

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// spinAll progresses the workers (and raw peers) until cond holds; fails
// after 10 s.
func spinAll(t testing.TB, what string, ws []*Worker, ps []*rawPeer, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		for _, w := range ws {
			w.Progress()
		}
		for _, p := range ps {
			p.it.Progress()
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// legitPeer connects a second worker to v and returns it, its endpoint
// to v, and v's endpoint to it (learned from a first message).
func legitPeer(t testing.TB, v *Worker) (*Worker, *Endpoint, *Endpoint) {
	t.Helper()
	l := hostileWorker(t, Config{})
	lToV, err := l.Connect(v.Address(), EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	r := v.TagRecv(buf, 1, exact, nil)
	s := lToV.TagSend([]byte("hi"), 1, nil)
	spinAll(t, "first message", []*Worker{v, l}, nil, func() bool { return r.Done() && s.Done() })
	if r.Err() != nil || s.Err() != nil {
		t.Fatalf("first message: %v / %v", r.Err(), s.Err())
	}
	return l, lToV, r.Info().Sender
}

// A peer that names another peer's endpoint id in tag, active-message,
// rendezvous, keepalive, close, sequenced and wireup messages is not taken for that
// peer: its messages are dropped and counted, and the other peer's
// endpoint stays healthy in both directions.
func TestLaneBindingForgedID(t *testing.T) {
	v := hostileWorker(t, Config{})
	sink := newAMSink(v)
	var drops []DropEvent
	v.SetDropHandler(func(e DropEvent) { drops = append(drops, e) })
	l, lToV, vToL := legitPeer(t, v)
	p := newRawPeer(t, v)
	ws, ps := []*Worker{v, l}, []*rawPeer{p}
	settle := func() {
		for i := 0; i < 2000; i++ {
			v.Progress()
			l.Progress()
			p.it.Progress()
		}
	}

	forged := 0
	for id := uint32(0); id < p.dst+4; id++ {
		if id == p.dst {
			continue
		}
		var h [eagerHdr]byte
		putEagerHdr(h[:], 2, id)
		p.send(amEager, append(h[:], "forged"...))
		p.send(amUser, user(id, amHostile, nil, []byte("forged")))
		p.send(amKeepalive, append(le.AppendUint32(nil, id), 0, 0, 0, 0))
		p.send(amATS, (&ack{dst: id, req: 1}).encode(nil))
		p.send(amClose, le.AppendUint32(nil, id))
		var sq [seqEagerHdr]byte
		putSeqHdr(sq[:], id, 1, 0, amEager)
		putEagerHdr(sq[seqHdr:], 2, id)
		p.send(amSeq, append(sq[:], "forged"...))
		if id == vToL.id {
			forged += 6 // the others name no endpoint: closed drops
		}
	}
	la, err := UnpackAddress(l.Address())
	if err != nil {
		t.Fatal(err)
	}
	p.send(amWireup, (&wireup{kind: wireupRep, src: 4242, dst: 0, addr: la.Pack()}).encode())
	p.send(amWireup, (&wireup{kind: wireupReq, src: 4243, addr: la.Pack()}).encode())
	forged += 2
	settle()

	if err := vToL.Err(); err != nil {
		t.Fatalf("endpoint of the legitimate peer failed: %v", err)
	}
	if len(sink.msgs) != 0 {
		t.Fatalf("%d forged active messages delivered", len(sink.msgs))
	}
	// The legitimate peer's message with the forged messages' tag is the
	// one received, from the right sender.
	buf := make([]byte, 64)
	r := v.TagRecv(buf, 2, exact, nil)
	s := lToV.TagSend([]byte("legit"), 2, nil)
	spinAll(t, "legitimate tag message", ws, ps, func() bool { return r.Done() && s.Done() })
	if r.Err() != nil || string(buf[:r.Info().Length]) != "legit" || r.Info().Sender != vToL {
		t.Fatalf("received %q from %v (%v), want \"legit\" from the legitimate peer", buf[:r.Info().Length], r.Info().Sender, r.Err())
	}
	// And the other way: v's endpoint still names l's endpoint correctly.
	rb := make([]byte, 64)
	r2 := l.TagRecv(rb, 3, exact, nil)
	s2 := vToL.TagSend([]byte("back"), 3, nil)
	spinAll(t, "message back", ws, ps, func() bool { return r2.Done() && s2.Done() })
	if r2.Err() != nil || string(rb[:r2.Info().Length]) != "back" {
		t.Fatalf("message back: %q, %v", rb[:r2.Info().Length], r2.Err())
	}
	st := v.Stats()
	if st.LaneMismatch != uint64(forged) {
		t.Errorf("LaneMismatch = %d, want %d", st.LaneMismatch, forged)
	}
	n := 0
	for _, e := range drops {
		if e.Reason == DropLaneMismatch && errors.Is(e.Err, uct.ErrInvalidParam) {
			n++
		}
	}
	if n != forged {
		t.Errorf("%d lane-mismatch events, want %d", n, forged)
	}
	// The raw peer's own messages still arrive.
	p.send(amUser, user(p.dst, amHostile, nil, []byte("own")))
	spinAll(t, "raw peer's own message", ws, ps, func() bool { return len(sink.msgs) == 1 })
	if !bytes.Equal(sink.msgs[0], []byte("own")) {
		t.Fatalf("own message %q", sink.msgs[0])
	}
}

// A close is accepted from the peer it names: the endpoint fails with
// ErrConnectionReset.
func TestLaneBindingOwnClose(t *testing.T) {
	v := hostileWorker(t, Config{})
	p := newRawPeer(t, v)
	v.lock()
	ep := v.epByID(p.dst)
	v.unlock()
	if ep == nil {
		t.Fatal("no endpoint for the raw peer")
	}
	p.send(amClose, le.AppendUint32(nil, p.dst))
	p.progressUntil("close", func() bool { return ep.Err() != nil })
	if !errors.Is(ep.Err(), uct.ErrConnectionReset) {
		t.Fatalf("endpoint error %v, want ErrConnectionReset", ep.Err())
	}
	if n := v.Stats().LaneMismatch; n != 0 {
		t.Fatalf("LaneMismatch = %d after a genuine close", n)
	}
}

// A wireup request carrying another worker's iface addresses under a new
// identity makes the victim connect back to that worker; the victim must
// not bind the endpoint to the requester, and that worker must not take
// the victim's reply as a new id for its endpoint.
func TestLaneBindingConnectBack(t *testing.T) {
	v := hostileWorker(t, Config{})
	l, lToV, vToL := legitPeer(t, v)
	p := newRawPeer(t, v)
	la, err := UnpackAddress(l.Address())
	if err != nil {
		t.Fatal(err)
	}
	la.UUID ^= 0x5a5a
	before := v.Stats().LaneMismatch
	p.send(amWireup, (&wireup{kind: wireupReq, src: 3, addr: la.Pack()}).encode())
	for i := 0; i < 2000; i++ {
		v.Progress()
		l.Progress()
		p.it.Progress()
	}
	v.lock()
	live := len(v.live)
	v.unlock()
	if live != 2 {
		t.Errorf("victim has %d endpoints, want 2 (the legitimate and the raw peer's)", live)
	}
	if n := v.Stats().LaneMismatch; n != before+1 {
		t.Errorf("LaneMismatch went from %d to %d, want one more", before, n)
	}
	rb := make([]byte, 8)
	r := l.TagRecv(rb, 5, exact, nil)
	s := vToL.TagSend([]byte("ok"), 5, nil)
	r2 := v.TagRecv(make([]byte, 8), 6, exact, nil)
	s2 := lToV.TagSend([]byte("ok"), 6, nil)
	spinAll(t, "traffic after the connect-back", []*Worker{v, l}, []*rawPeer{p}, func() bool {
		return r.Done() && s.Done() && r2.Done() && s2.Done()
	})
	if r.Err() != nil || r2.Err() != nil || r2.Info().Sender != vToL {
		t.Fatalf("traffic after the connect-back: %v, %v", r.Err(), r2.Err())
	}
}

// A peer that purges its endpoint and connects again to a worker that
// kept its own endpoint is taken back: the new connection (over rc a new
// QP, a new source) comes from the iface the worker's endpoint connects
// to, so the endpoint rebinds to it and learns the new id.
func TestLaneBindingReconnect(t *testing.T) {
	for _, tr := range []string{"shm", "rc"} {
		t.Run(tr, func(t *testing.T) {
			open := func() *Worker {
				ctx, err := newContext(Config{Transports: cycleTransports(tr)}, func(string) string { return "" })
				if err != nil {
					t.Skipf("%s: %v", tr, err)
				}
				t.Cleanup(func() { ctx.Close() })
				w, err := ctx.NewWorker()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { w.Close() })
				return w
			}
			v, l := open(), open()
			ws := []*Worker{v, l}
			var vToL *Endpoint
			for round := 0; round < 3; round++ {
				lToV, err := l.Connect(v.Address(), EPParams{})
				if err != nil {
					t.Fatal(err)
				}
				in, back := make([]byte, 8), make([]byte, 8)
				r := v.TagRecv(in, 1, exact, nil)
				s := lToV.TagSend([]byte("there"), 1, nil)
				spinAll(t, "message to v", ws, nil, func() bool { return r.Done() && s.Done() })
				if r.Err() != nil || vToL != nil && r.Info().Sender != vToL {
					t.Fatalf("round %d: %v, sender %v (v's endpoint %v)", round, r.Err(), r.Info().Sender, vToL)
				}
				vToL = r.Info().Sender
				rb := l.TagRecv(back, 2, exact, nil)
				sb := vToL.TagSend([]byte("back"), 2, nil)
				spinAll(t, "message back", ws, nil, func() bool { return rb.Done() && sb.Done() })
				if rb.Err() != nil || string(back[:rb.Info().Length]) != "back" {
					t.Fatalf("round %d: message back: %v", round, rb.Err())
				}
				l.Purge(lToV) // v is not told
			}
			if n := v.Stats().LaneMismatch; n != 0 {
				t.Fatalf("LaneMismatch = %d", n)
			}
		})
	}
}
