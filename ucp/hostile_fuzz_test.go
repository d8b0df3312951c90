package ucp

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// hostileRig is a victim worker with a legitimate peer and a raw peer
// beside it.
type hostileRig struct {
	t          testing.TB
	v, l       *Worker
	lToV, vToL *Endpoint
	p          *rawPeer
	sink       *amSink
	lAddr      []byte
	round      uint32
	trap       hostileTrap
}

// hostileTrap is a receive kept posted for the tags hostile messages
// carry (bit 63 set), inside a larger buffer whose bytes around it must
// stay untouched: eager tag messages in fragments that a raw peer sends
// are placed into it (tag_frag_place.go), whatever their fragments say.
type hostileTrap struct {
	r     *Request
	calls *int
	all   []byte
	got   int // receives completed
}

const (
	trapLen   = 5000
	trapGuard = 64
	trapTag   = 1 << 63
)

// post posts the trap's receive.
func (h *hostileRig) postTrap() {
	tr := &h.trap
	if tr.all == nil {
		tr.all = bytes.Repeat([]byte{0xa5}, trapLen+2*trapGuard)
	}
	n := new(int)
	tr.calls = n
	tr.r = h.v.TagRecv(tr.all[trapGuard:trapGuard+trapLen:trapGuard+trapLen], trapTag, trapTag,
		&Params{Callback: func(*Request) { *n++ }})
}

// checkTrap checks that nothing was written around the trap's buffer and
// that its receive completed at most once; a completed one is posted
// again.
func (h *hostileRig) checkTrap() {
	tr := &h.trap
	for i, b := range tr.all {
		if (i < trapGuard || i >= trapGuard+trapLen) && b != 0xa5 {
			h.t.Fatalf("byte %d outside the trap's receive buffer written (0x%02x)", i-trapGuard, b)
		}
	}
	if *tr.calls > 1 {
		h.t.Fatalf("trap receive completed %d times", *tr.calls)
	}
	if !tr.r.Done() {
		return
	}
	if *tr.calls != 1 {
		h.t.Fatalf("trap receive done, %d completions", *tr.calls)
	}
	tr.got++
	tr.r.Release()
	h.postTrap()
}

func newHostileRig(t testing.TB) *hostileRig {
	h := &hostileRig{t: t}
	h.v = hostileWorker(t, Config{AMReassemblyPeerMax: 8 << 20, AMReassemblyMax: 16 << 20})
	h.sink = newAMSink(h.v)
	h.l, h.lToV, h.vToL = legitPeer(t, h.v)
	h.p = newRawPeer(t, h.v)
	h.lAddr = h.l.Address()
	h.postTrap()
	return h
}

// settle progresses all three a while.
func (h *hostileRig) settle() {
	for i := 0; i < 200; i++ {
		h.v.Progress()
		h.l.Progress()
		h.p.it.Progress()
	}
	h.checkTrap()
}

// hostileMsg returns a ucp message of a random type with random fields;
// its endpoint id is the raw peer's own, the legitimate peer's, or
// random. Closes are only forged (a close of its own endpoint would end
// the raw peer's traffic).
func (h *hostileRig) hostileMsg(rng *rand.Rand) (uint8, []byte) {
	dst := []uint32{h.p.dst, h.vToL.id, rng.Uint32(), rng.Uint32N(8)}[rng.IntN(4)]
	u64 := func() uint64 {
		switch rng.IntN(4) {
		case 0:
			return rng.Uint64()
		case 1:
			return rng.Uint64N(1 << 20)
		case 2:
			return 1 << rng.IntN(48)
		}
		return 0
	}
	blob := func(max int) []byte {
		b := make([]byte, rng.IntN(max+1))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	tag := rng.Uint64() | 1<<63 // never a tag the legitimate traffic uses
	id := uint8(1 + rng.IntN(amUserRTS+1))
	if id == amUserRTS+1 {
		id = []uint8{amSeq, amTagFrag}[rng.IntN(2)]
	}
	var b []byte
	switch id {
	case amSeq:
		// a sequenced message: a number near the start or anywhere, any
		// acknowledgement, an eager message or any inner id
		inner := []uint8{amEager, amUser, uint8(rng.Uint32())}[rng.IntN(3)]
		hd := make([]byte, seqEagerHdr)
		putSeqHdr(hd, dst, []uint32{1 + rng.Uint32N(4), rng.Uint32()}[rng.IntN(2)], rng.Uint32(), inner)
		putEagerHdr(hd[seqHdr:], tag, dst)
		b = append(hd, blob(300)...)
	case amWireup:
		kind := uint8(1 + rng.IntN(2))
		b = (&wireup{kind: kind, src: rng.Uint32(), dst: dst, addr: [][]byte{h.lAddr, blob(64)}[rng.IntN(2)]}).encode()
	case amEager:
		var hd [eagerHdr]byte
		putEagerHdr(hd[:], tag, dst)
		b = append(hd[:], blob(300)...)
	case amRTS:
		b = (&rts{tag: tag, dst: dst, sreq: u64(), length: u64() & (1<<48 - 1), raddr: u64(), rkey: blob(80)}).encode(nil)
	case amATS, amATP:
		b = (&ack{dst: dst, req: u64(), status: uint8(rng.Uint32())}).encode(nil)
	case amRTR:
		b = (&rtr{dst: dst, sreq: u64(), rreq: u64(), raddr: u64(), length: u64(), rkey: blob(80)}).encode(nil)
	case amUser:
		b = user(dst, []uint16{amHostile, uint16(rng.Uint32())}[rng.IntN(2)], blob(16), blob(500))
	case amKeepalive:
		b = append(le.AppendUint32(nil, dst), le.AppendUint32(nil, rng.Uint32())...)
	case amClose:
		if dst == h.p.dst {
			dst = h.vToL.id
		}
		b = le.AppendUint32(nil, dst)
	case amUserFrag:
		total := []uint64{u64() & (1<<48 - 1), rng.Uint64N(1 << 24), 1 << 30}[rng.IntN(3)]
		b = h.p.frag(dst, amHostile, rng.Uint64N(4), total, []uint64{0, u64() % (total + 1)}[rng.IntN(2)], nil, blob(4000))
	case amTagFrag:
		total := []uint64{u64() & (1<<48 - 1), rng.Uint64N(1 << 24), 1 << 30}[rng.IntN(3)]
		off := []uint64{0, u64() % (total + 1)}[rng.IntN(2)]
		var hd []byte
		if off == 0 {
			hd = le.AppendUint64(nil, tag)
		}
		b = h.p.frag(dst, 0, rng.Uint64N(4), total, off, hd, blob(4000))
	case amUserRTS:
		b = (&userRTS{dst: dst, id: amHostile, sreq: u64(), length: u64() & (1<<48 - 1), raddr: u64(), rkey: blob(80), hdr: blob(16)}).encode(nil)
	}
	switch rng.IntN(8) {
	case 0: // truncated
		b = b[:rng.IntN(len(b)+1)]
	case 1: // a byte flipped
		if len(b) > 0 {
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		}
	case 2: // trailing garbage
		b = append(b, blob(16)...)
	}
	if len(b) > 8000 {
		b = b[:8000]
	}
	return id, b
}

// legit exchanges one eager and one rendezvous tag message each way
// between the victim and the legitimate peer and checks content and
// sender.
func (h *hostileRig) legit() {
	t := h.t
	t.Helper()
	h.round++
	for _, size := range []int{64, 100 << 10} {
		out := pattern(size, byte(h.round))
		in := make([]byte, size)
		tag := uint64(h.round)<<8 | uint64(size&0xff)
		r := h.v.TagRecv(in, tag, exact, nil)
		s := h.lToV.TagSend(out, tag, nil)
		back := make([]byte, size)
		rb := h.l.TagRecv(back, tag, exact, nil)
		sb := h.vToL.TagSend(out, tag, nil)
		spinAll(t, fmt.Sprintf("legitimate traffic of round %d, size %d (recv %v send %v recv back %v send back %v; stats %+v)",
			h.round, size, r.Done(), s.Done(), rb.Done(), sb.Done(), h.v.Stats()), []*Worker{h.v, h.l}, []*rawPeer{h.p}, func() bool {
			return r.Done() && s.Done() && rb.Done() && sb.Done()
		})
		for _, q := range []*Request{r, s, rb, sb} {
			if q.Err() != nil {
				t.Fatalf("round %d size %d: legitimate request failed: %v", h.round, size, q.Err())
			}
		}
		if !bytes.Equal(in, out) || !bytes.Equal(back, out) || r.Info().Sender != h.vToL {
			t.Fatalf("round %d size %d: legitimate message differs or has the wrong sender", h.round, size)
		}
		for _, q := range []*Request{r, s, rb, sb} {
			q.Release()
		}
	}
}

// A raw peer sends ucp messages of every type (sequenced ones too) with
// random fields beside legitimate traffic: nothing crashes, the victim's
// heap stays bounded, and the legitimate messages arrive intact from the
// right sender.
func TestHostilePeerFuzz(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("UCGO_HOSTILE_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (UCGO_HOSTILE_SEED reproduces it)", seed)
	rng := rand.New(rand.NewPCG(seed, 17))
	h := newHostileRig(t)
	h.legit()
	before := heapInUse()
	const rounds, perRound = 60, 40
	deadline := time.Now().Add(60 * time.Second)
	for round := 0; round < rounds && time.Now().Before(deadline); round++ {
		for i := 0; i < perRound; i++ {
			id, b := h.hostileMsg(rng)
			h.p.send(id, b)
			if i%8 == 0 {
				h.settle()
			}
		}
		h.settle()
		h.legit()
	}
	if err := h.vToL.Err(); err != nil {
		t.Fatalf("legitimate endpoint failed: %v", err)
	}
	if grew := int64(heapInUse()) - int64(before); grew > 64<<20 {
		t.Fatalf("victim heap grew by %d MiB", grew>>20)
	}
	st := h.v.Stats()
	t.Logf("stats: %+v; trap receives completed: %d", st, h.trap.got)
	if st.LaneMismatch == 0 {
		t.Error("no forged message was counted")
	}
}

// FuzzHostilePeer sends one ucp message of any AM id and content from a
// raw peer to a worker, then checks that a legitimate peer's traffic is
// intact.
func FuzzHostilePeer(f *testing.F) {
	for id := uint8(1); id <= amUserRTS; id++ {
		f.Add(id, uint8(0), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
		f.Add(id, uint8(1), make([]byte, 64))
	}
	seq := make([]byte, seqEagerHdr+8)
	putSeqHdr(seq, 0, 1, 0, amEager)
	f.Add(uint8(amSeq), uint8(0), seq)
	f.Add(uint8(amSeq), uint8(1), seq)
	f.Add(uint8(amSeq), uint8(1), seq[:seqHdr])
	// eager tag messages in fragments that the trap's receive takes: a
	// first fragment (placed, then continued or broken by later inputs),
	// a whole message in one, a message longer than the trap, and
	// fragments continuing message 1 in and out of order; an active
	// message's fragment naming a placed message's id
	tagFrag := func(mid, total, off uint64, data []byte) []byte {
		var hd []byte
		if off == 0 {
			hd = le.AppendUint64(nil, trapTag|77)
		}
		b := (&userFrag{mid: mid, total: total, off: off, hdr: hd}).encode(nil)
		return append(b, data...)
	}
	f.Add(uint8(amTagFrag), uint8(0), tagFrag(1, 3000, 0, make([]byte, 1000)))
	f.Add(uint8(amTagFrag), uint8(0), tagFrag(2, 200, 0, make([]byte, 200)))
	f.Add(uint8(amTagFrag), uint8(0), tagFrag(3, 9000, 0, make([]byte, 4000)))
	f.Add(uint8(amTagFrag), uint8(0), tagFrag(3, 9000, 4000, make([]byte, 4000)))
	f.Add(uint8(amTagFrag), uint8(0), tagFrag(3, 9000, 8000, make([]byte, 1000)))
	f.Add(uint8(amTagFrag), uint8(0), tagFrag(1, 3000, 1000, make([]byte, 2000)))
	f.Add(uint8(amTagFrag), uint8(0), tagFrag(1, 3000, 2000, make([]byte, 1000)))
	f.Add(uint8(amTagFrag), uint8(0), tagFrag(1, 4000, 1000, make([]byte, 3000)))
	f.Add(uint8(amUserFrag), uint8(0), append((&userFrag{id: amHostile, mid: 1, total: 3000, off: 1000}).encode(nil), make([]byte, 2000)...))
	// an active message (empty header) whose last fragment comes as a
	// tag message's
	f.Add(uint8(amUserFrag), uint8(0), append((&userFrag{id: amHostile, mid: 5, total: 200}).encode(nil), make([]byte, 100)...))
	f.Add(uint8(amTagFrag), uint8(0), tagFrag(5, 200, 100, make([]byte, 100)))
	h := newHostileRig(f)
	f.Fuzz(func(t *testing.T, id uint8, sel uint8, body []byte) {
		h.t, h.p.t = t, t
		if len(body) > 8000 {
			body = body[:8000]
		}
		b := append([]byte(nil), body...)
		// Name a real endpoint in the usual place, most of the time.
		dst := []uint32{h.p.dst, h.vToL.id, le.Uint32(append(b, 0, 0, 0, 0))}[sel%3]
		off := 0
		if id == amEager || id == amRTS {
			off = 8
		}
		if id == amClose && dst == h.p.dst {
			dst = h.vToL.id
		}
		if id != amWireup && len(b) >= off+4 {
			le.PutUint32(b[off:], dst)
		}
		h.p.send(id%32, b)
		h.settle()
		if err := h.vToL.Err(); err != nil {
			t.Fatalf("legitimate endpoint failed: %v", err)
		}
		h.legit()
	})
}
