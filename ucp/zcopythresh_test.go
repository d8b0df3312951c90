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
// zero copy (4096); ZcopyThresh set by the user holds on rc too.
func TestEagerZcopyPerLane(t *testing.T) {
	rcLo := func() []uct.Component {
		return []uct.Component{rc.New(rc.Config{Device: "lo", Addr: netip.MustParseAddr("127.0.0.1"), Port: -1})}
	}
	for _, c := range []struct {
		name      string
		cfg       Config
		wantZcopy bool
	}{
		{"rc-default", Config{Transports: rcLo()}, false},
		{"rc-thresh-set", Config{Transports: rcLo(), ZcopyThresh: 4096}, true},
		{"shm-default", Config{Transports: []uct.Component{shm.New()}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws, ep := workerPair(t, c.cfg)
			in := make([]byte, 4096)
			out := bytes.Repeat([]byte{0x5a}, 4096)
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
				t.Errorf("4 KiB send by eager zero copy (TagSend returned a request): %v, want %v", zcopy, c.wantZcopy)
			}
		})
	}
}
