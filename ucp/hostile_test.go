package ucp

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/uct"
)

// rawPeer is a peer that speaks ucp's wire format itself over a raw shm
// iface of this process: it sends what a buggy or hostile peer might.
type rawPeer struct {
	t    testing.TB
	w    *Worker // the victim
	md   uct.MD
	it   uct.Iface
	ep   uct.Endpoint
	id   uint32 // our endpoint id, as the victim's messages name it
	dst  uint32 // the victim's endpoint id for us
	got  map[uint8]int
	last map[uint8][]byte
}

// newRawPeer connects a raw peer to w (whose context uses shm): it sends
// a wireup request with a worker address of its own and waits for the
// reply, which names the victim's endpoint for it.
func newRawPeer(t testing.TB, w *Worker) *rawPeer {
	t.Helper()
	va, err := UnpackAddress(w.Address())
	if err != nil {
		t.Fatal(err)
	}
	var shmAddr []byte
	for _, f := range va.Ifaces {
		if f.Transport == "shm" {
			shmAddr = f.Addr
		}
	}
	if shmAddr == nil {
		t.Fatal("victim has no shm iface")
	}
	p := &rawPeer{t: t, w: w, id: 900 + rand.Uint32N(100), got: map[uint8]int{}, last: map[uint8][]byte{}}
	if p.md, err = shm.New().OpenMD(uct.MDParams{}); err != nil {
		t.Fatal(err)
	}
	if p.it, err = p.md.OpenIface(uct.IfaceParams{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.ep != nil {
			p.ep.Close()
		}
		p.it.Close()
		p.md.Close()
	})
	for id := uint8(1); id <= amUserRTS; id++ {
		p.it.SetAMHandler(id, func(_ any, data []byte, _ uct.AMFlags) {
			p.got[id]++
			p.last[id] = append([]byte(nil), data...)
		}, nil)
	}
	if p.ep, err = p.it.Connect(shmAddr, uct.EPParams{}); err != nil {
		t.Fatal(err)
	}
	mine := Address{UUID: rand.Uint64() | 1, Host: va.Host, Ifaces: []IfaceAddress{{"shm", p.it.Address()}}}
	p.send(amWireup, (&wireup{kind: wireupReq, src: p.id, addr: mine.Pack()}).encode())
	p.progressUntil("wireup reply", func() bool { return p.got[amWireup] > 0 })
	m, err := decodeWireup(p.last[amWireup])
	if err != nil || m.kind != wireupRep || m.dst != p.id {
		t.Fatalf("wireup reply %+v: %v", m, err)
	}
	p.dst = m.src
	return p
}

// send sends one AM to the victim, retrying while its FIFO is full.
func (p *rawPeer) send(id uint8, b []byte) {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := p.ep.AMBcopy(id, b, nil)
		if err == nil {
			return
		}
		if !errors.Is(err, uct.ErrNoResource) || time.Now().After(deadline) {
			p.t.Fatalf("raw send %d: %v", id, err)
		}
		p.w.Progress()
	}
}

// progressUntil progresses the victim and the raw peer until cond holds;
// fails after 10 s.
func (p *rawPeer) progressUntil(what string, cond func() bool) {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		p.w.Progress()
		p.it.Progress()
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// settle progresses both sides a while (for things that must not happen).
func (p *rawPeer) settle() {
	for i := 0; i < 2000; i++ {
		p.w.Progress()
		p.it.Progress()
	}
}

// frag returns a user AM fragment of message mid.
func (p *rawPeer) frag(dst uint32, id uint16, mid, total, off uint64, hdr, data []byte) []byte {
	b := (&userFrag{dst: dst, id: id, mid: mid, total: total, off: off, hdr: hdr}).encode(nil)
	return append(b, data...)
}

// user returns a one-fragment user AM.
func user(dst uint32, id uint16, hdr, data []byte) []byte {
	b := make([]byte, userHdr, userHdr+len(hdr)+len(data))
	putUserHdr(b, dst, id, len(hdr))
	return append(append(b, hdr...), data...)
}

// hostileWorker opens a worker over shm with cfg, closed when t ends.
func hostileWorker(t testing.TB, cfg Config) *Worker {
	t.Helper()
	cfg.Transports = []uct.Component{shm.New()}
	ctx, err := newContext(cfg, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	w, err := ctx.NewWorker()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}
