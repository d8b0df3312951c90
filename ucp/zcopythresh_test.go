package ucp

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/uct"
)

// TestEagerZcopyPerLane checks which eager protocol a 4 KiB tag send
// takes by whether it needs a request: an eager bcopy send that fits
// completes at once and TagSend returns nil, an eager zcopy send returns
// a request that completes later. With ZcopyThresh left to its default,
// rc (whose AMZcopy copies as AMBcopy does) sends it by bcopy and shm by
// zero copy (4096); ZcopyThresh set by the user holds on rc too. An
// 8 KiB message over rc fits one segment with its headers and goes eager
// by bcopy, not by rendezvous (which needs a request).
func TestEagerZcopyPerLane(t *testing.T) {
	rcLo := func() []uct.Component {
		return []uct.Component{rc.New(rc.Config{Device: "lo", Addr: netip.MustParseAddr("127.0.0.1"), Port: -1})}
	}
	for _, c := range []struct {
		name      string
		cfg       Config
		size      int
		wantZcopy bool // or rendezvous: TagSend returns a request
	}{
		{"rc-default", Config{Transports: rcLo()}, 4096, false},
		{"rc-thresh-set", Config{Transports: rcLo(), ZcopyThresh: 4096}, 4096, true},
		{"shm-default", Config{Transports: []uct.Component{shm.New()}}, 4096, true},
		{"rc-8KiB", Config{Transports: rcLo()}, 8192, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws, ep := workerPair(t, c.cfg)
			in := make([]byte, c.size)
			out := bytes.Repeat([]byte{0x5a}, c.size)
			oneway := func(useNil bool) (sentNil bool) {
				r := ws[1].TagRecv(in, 9, exact, nil)
				var p *Params
				if !useNil {
					p = &Params{UserData: 1} // a request even for bcopy: the first send wires up
				}
				s := ep.TagSend(out, 9, p)
				deadline := time.Now().Add(30 * time.Second)
				for !r.Done() || !s.Done() {
					if time.Now().After(deadline) {
						t.Fatal("tag send not done within 30 s")
					}
					ws[0].Progress()
					ws[1].Progress()
				}
				if r.Err() != nil || s.Err() != nil {
					t.Fatal(r.Err(), s.Err())
				}
				if !bytes.Equal(in, out) {
					t.Fatal("received data differs")
				}
				r.Release()
				s.Release()
				clear(in)
				return s == nil
			}
			oneway(false)
			if zcopy := !oneway(true); zcopy != c.wantZcopy {
				t.Errorf("%d-byte send by eager zero copy or rendezvous (TagSend returned a request): %v, want %v", c.size, zcopy, c.wantZcopy)
			}
		})
	}
}

// TestEagerFits8KiB: an 8 KiB message with ucp's eager header fits one
// bcopy buffer of every transport, so it goes eager, not by rendezvous.
func TestEagerFits8KiB(t *testing.T) {
	rcLo := []uct.Component{rc.New(rc.Config{Device: "lo", Addr: netip.MustParseAddr("127.0.0.1"), Port: -1})}
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"shm", Config{Transports: []uct.Component{shm.New()}}},
		{"rc", Config{Transports: rcLo}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, ep := workerPair(t, c.cfg)
			if ep.rndvMin <= 8192 {
				t.Errorf("rendezvous from %d bytes, want an 8 KiB message eager (bcopy max %d)", ep.rndvMin, ep.bcopyMax)
			}
		})
	}
}
