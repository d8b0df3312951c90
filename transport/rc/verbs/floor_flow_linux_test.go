package verbs

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/ucgo/ucgo/internal/netns"
)

// TestFloorFlows moves data with each flow of the floor benchmark over
// lo inside this process, in two runs (the second continues the first's
// PSNs): every byte arrives, no PSN is skipped, every packet has its
// size and, in the icrc flow, a good ICRC and its payload in its place.
func TestFloorFlows(t *testing.T) {
	lo := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	const mib = 3
	for _, f := range floorFlows {
		t.Run(f.name, func(t *testing.T) {
			r, err := openFloorRx(f, lo)
			if err != nil {
				t.Fatal(err)
			}
			defer r.close()
			tx, err := openFloorTx(f, lo, r.local)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.close()
			for run := range 2 {
				type result struct {
					st  floorStats
					err error
				}
				done := make(chan result, 1)
				go func() {
					st, err := r.run(mib)
					done <- result{st, err}
				}()
				if err := tx.run(mib); err != nil {
					t.Fatalf("run %d: send: %v", run, err)
				}
				res := <-done
				if res.err != nil {
					t.Fatalf("run %d: receive: %v", run, res.err)
				}
				if st := res.st; st.bytes != mib*floorMiB || st.lost != 0 || st.bad != 0 {
					t.Fatalf("run %d: received %d bytes (want %d), %d packets lost, %d bad", run, st.bytes, mib*floorMiB, st.lost, st.bad)
				}
			}
			if f.icrc && !bytes.Equal(r.dst, tx.src) {
				t.Fatal("payloads not in their places")
			}
		})
	}
}

// TestFloorChild runs the icrc flow against a child process, over lo and
// (as root) over a veth pair, as the benchmark does.
func TestFloorChild(t *testing.T) {
	flow, err := floorFlowNamed("icrc")
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]func(t *testing.T) floorLink{
		"lo": func(*testing.T) floorLink { return floorLink{name: "lo"} },
		"veth": func(t *testing.T) floorLink {
			pair, err := netns.NewPair(t)
			if err != nil {
				t.Fatal(err)
			}
			return floorLink{name: "veth", pair: pair}
		},
	}
	for name, link := range links {
		t.Run(name, func(t *testing.T) {
			p := startFloorPeer(t, link(t), flow)
			for run := range 2 {
				r, err := p.run(2)
				if err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
				if r.rx.bytes != 2*floorMiB || r.rx.lost != 0 {
					t.Fatalf("run %d: received %d bytes (want %d), %d packets lost", run, r.rx.bytes, 2*floorMiB, r.rx.lost)
				}
			}
		})
	}
}
