package ucp

import (
	"bytes"
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/internal/netns"
)

// laneChunks returns the chunks of striped transfers posted on each of
// ep's lanes.
func laneChunks(ep *Endpoint) []uint64 {
	ep.w.lock()
	defer ep.w.unlock()
	var out []uint64
	for i := range ep.lanes {
		out = append(out, ep.lanes[i].chunks)
	}
	return out
}

// stripeAlways, in the environment of both sides, turns the rail gate
// off: the tests of striping itself stripe every transfer from
// stripeMin.
const stripeAlways = EnvStripeAlways + "=1"

// chunksGrew reports whether every lane carried more chunks than before.
func chunksGrew(before, after []uint64) bool {
	for i := range after {
		if after[i] <= before[i] {
			return false
		}
	}
	return true
}

// Two rails: rendezvous data (get and put schemes) is striped over both
// rc lanes, each carrying chunks, and arrives intact; below the striping
// threshold or with MaxRndvRails 1 one lane carries it all.
func TestRailsStripeRndv(t *testing.T) {
	for _, c := range []struct {
		scheme string
		rails  int
	}{{"get", 0}, {"put", 0}, {"get", 1}} {
		t.Run(c.scheme+"/rails="+string(rune('0'+c.rails)), func(t *testing.T) {
			cfg := Config{MaxRndvRails: c.rails}
			env := []string{EnvRndvScheme + "=" + c.scheme, stripeAlways}
			if c.rails != 0 {
				env = append(env, EnvMaxRndvRails+"=1")
			}
			nd, _ := railsWorld(t, 2, "echo", cfg, env...)
			ep := nd.eps[1]
			if want := map[int]int{0: 2, 1: 0}[c.rails]; len(ep.rails) != want {
				t.Fatalf("rails %v, want %d", ep.rails, want)
			}
			for i, n := range []int{stripeMin - 1, stripeMin, 1 << 20, 4<<20 + 3} {
				before := laneChunks(ep)
				out, in := pattern(n, byte(i+1)), make([]byte, n+1)
				tag := uint32(30 + i)
				r := nd.w.TagRecv(in, mkTag(1, tag), exact, nil)
				s := ep.TagSend(out, mkTag(0, tag), nil)
				nd.must(nd.wait(s))
				nd.must(nd.wait(r))
				if r.Info().Length != n || !bytes.Equal(in[:n], out) {
					t.Fatalf("%d bytes: content differs", n)
				}
				after := laneChunks(ep)
				striped := n >= stripeMin && c.rails != 1
				if chunksGrew(before, after) != striped {
					t.Fatalf("%d bytes: chunks per lane %v -> %v, striped %v expected", n, before, after, striped)
				}
				t.Logf("%d bytes: chunks per lane %v -> %v", n, before, after)
			}
			nd.quit(1)
			nd.exitOK(1)
		})
	}
}

// Two rails: large Put and Get are striped over both lanes with each
// lane's key of the peer's registration, and move the right bytes.
func TestRailsStripeRMA(t *testing.T) {
	nd, _ := railsWorld(t, 2, "rma", Config{}, stripeAlways)
	ep := nd.eps[1]
	keys := recvKeys(t, nd, 1)
	reg := keys[0]
	before := laneChunks(ep)
	in := make([]byte, 1<<20)
	nd.must(nd.wait(ep.Get(in, reg.addr, reg.key, nil)))
	if !bytes.Equal(in, pattern(1<<20, 5)) {
		t.Fatal("get: content differs")
	}
	mid := laneChunks(ep)
	if !chunksGrew(before, mid) {
		t.Fatalf("get: chunks per lane %v -> %v, want both rails", before, mid)
	}
	out := pattern(700001, 77)
	nd.must(nd.wait(ep.Put(out, reg.addr+100, reg.key, nil)))
	back := make([]byte, len(out))
	nd.must(nd.wait(ep.Get(back, reg.addr+100, reg.key, nil)))
	if !bytes.Equal(back, out) {
		t.Fatal("put, get back: content differs")
	}
	if after := laneChunks(ep); !chunksGrew(mid, after) {
		t.Fatalf("put: chunks per lane %v -> %v, want both rails", mid, after)
	}
	// a small transfer goes on one lane
	small := make([]byte, 1000)
	mid = laneChunks(ep)
	nd.must(nd.wait(ep.Get(small, reg.addr, reg.key, nil)))
	want := pattern(1<<20, 5)
	copy(want[100:], out)
	if after := laneChunks(ep); after[0] != mid[0] || after[1] != mid[1] || !bytes.Equal(small, want[:1000]) {
		t.Fatalf("a 1000-byte get was striped (%v -> %v) or differs", mid, after)
	}
	nd.quit(1)
	nd.exitOK(1)
}

// A striped transfer whose second rail goes down midway does not hang.
// Failover off: the Gets in flight complete, those that lost chunks with
// an error and the others with the right bytes. Failover to any
// transport: the link watch fails the rail's lane, the transfers move to
// the other rail and every Get completes with the right bytes.
func TestRailsStripeRailDown(t *testing.T) {
	for _, mode := range []string{"off", "any"} {
		t.Run("failover="+mode, func(t *testing.T) {
			stripeRailDown(t, mode)
		})
	}
}

func stripeRailDown(t *testing.T, mode string) {
	t.Setenv(epTimeoutEnv, "2s")
	rails, err := netns.NewRails(t, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rails.A {
		for _, ns := range []*netns.NS{rails.A[i], rails.B[i]} {
			if err := ns.SetRate(100); err != nil {
				t.Skipf("tc: %v", err)
			}
		}
	}
	cfg := Config{}
	if mode == "any" {
		cfg.Failover = failover.DefaultPolicy()
		cfg.Failover.Mode = failover.AnyTransport
	}
	nd := railsWorldOn(t, rails, "rma", cfg, EnvErrMode+"=peer", EnvFailover+"="+mode, stripeAlways)
	ep := nd.eps[1]
	keys := recvKeys(t, nd, 1)
	reg := keys[0]
	const n = 16
	ins := make([][]byte, n)
	reqs := make([]*Request, n)
	for i := range reqs {
		ins[i] = make([]byte, 1<<20)
		reqs[i] = ep.Get(ins[i], reg.addr, reg.key, nil)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		rails.A[1].SetLink(false)
	}()
	ok, failed := 0, 0
	for i, r := range reqs {
		err := nd.wait(r)
		switch {
		case err != nil:
			failed++
		case !bytes.Equal(ins[i], pattern(1<<20, 5)):
			t.Fatalf("get %d completed without error but its content differs", i)
		default:
			ok++
		}
	}
	t.Logf("%d gets completed, %d failed; chunks per lane %v; endpoint error %v", ok, failed, laneChunks(ep), ep.Err())
	switch {
	case mode == "off" && failed == 0:
		t.Fatal("no get failed although a rail went down under them")
	case mode == "any" && (failed != 0 || ep.Err() != nil):
		t.Fatalf("with failover %d gets failed, endpoint error %v", failed, ep.Err())
	}
	if mode == "any" {
		// still moving on the remaining rail
		in := make([]byte, 1<<20)
		nd.must(nd.wait(ep.Get(in, reg.addr, reg.key, nil)))
		if !bytes.Equal(in, pattern(1<<20, 5)) {
			t.Fatal("get after the failover: content differs")
		}
	}
}

// TestThreadSafeRails is TestThreadSafeRC over two rails: the endpoint
// has two bound rc lanes and stripes its rendezvous data, Puts and Gets
// over both, driven from several goroutines at once.
func TestThreadSafeRails(t *testing.T) {
	cfg := Config{ErrorMode: ErrorModePeer, KeepaliveInterval: -1, ThreadSafe: true}
	nd, _ := railsWorld(t, 2, "mt", cfg, EnvErrMode+"=peer", EnvThreadSafe+"=1", stripeAlways)
	before := laneChunks(nd.eps[1])
	threadSafeTraffic(t, nd)
	if after := laneChunks(nd.eps[1]); !chunksGrew(before, after) {
		t.Fatalf("chunks per lane %v -> %v: not striped", before, after)
	}
}
