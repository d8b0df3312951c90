package ucp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/internal/fault"
	"github.com/ucgo/ucgo/uct"
)

// foOffStripe is the size of the striped puts and gets of
// TestFailoverOffRailBlackHole: above stripeMin, so each goes over both
// rails.
const foOffStripe = 128 << 10

// foOffBase is where the striped puts' regions (four, each written once)
// and the region the striped gets read start in fooffsink's memory, after
// the stream's own.
const (
	foOffBase    = 2 << 20
	foOffMemSize = foOffBase + 5*foOffStripe
)

// foOffTagUnrecv tags messages that fooffsink never receives.
const foOffTagUnrecv = foTagData + 1

func init() {
	// fooffsink: like fosink, give rank 0 the address and key of memory
	// for its puts, gets and atomics, then take whatever arrives (tag
	// messages, active messages, rendezvous data) and stay alive, so that
	// a failed endpoint is never a dead peer, until stdin closes or says
	// anything (bounded: two minutes).
	childRoles["fooffsink"] = func(nd *node) error {
		mem, err := shareMem(nd, foOffMemSize, nil)
		if err != nil {
			return err
		}
		defer mem.Close()
		var end atomic.Bool
		go func() {
			bufio.NewReader(os.Stdin).ReadString('\n')
			end.Store(true)
		}()
		nd.w.SetAMHandler(foAM, func(m *AMMessage) {
			if m.Rndv {
				m.RecvData(make([]byte, m.Length), nil).Release()
			}
		})
		buf := make([]byte, 1<<20)
		var recv func()
		recv = func() {
			nd.w.TagRecv(buf, mkTag(0, foTagData), exact, &Params{Callback: func(r *Request) {
				if r.Err() == nil {
					recv()
				}
			}}).Release()
		}
		recv()
		for stop := time.Now().Add(2 * time.Minute); !end.Load() && time.Now().Before(stop); {
			nd.w.Progress()
		}
		return nil
	}
}

// TestFailoverOffRailBlackHole: two namespaces joined by two rails,
// failover off. An eBPF program black-holes every RoCE packet arriving
// on one rail while the stream of TestFailoverRailDown is in flight, with
// puts and gets striped over both rails and endpoint flushes among it.
// The black-holed lane's work requests exceed their retries and the
// endpoint fails (failover is off, so that is right); every request,
// those in flight on the healthy rail and those waiting for a peer's
// answer included, completes exactly once, within a bounded time, and
// those started after the failure with the endpoint's error.
func TestFailoverOffRailBlackHole(t *testing.T) {
	for _, which := range []string{"am-rail", "other-rail"} {
		t.Run(which, func(t *testing.T) { foOffRailFault(t, which == "am-rail", false, false, false) })
	}
}

// TestFailoverOffRailDown is TestFailoverOffRailBlackHole with the rail's
// link down for good instead of black-holed: its lane refuses posts with
// uct.ErrRouteLost, a transient status, and striped chunks wait for it;
// once the route stayed lost for longer than the endpoint's timeout the
// lane has failed, and with it (failover off) the endpoint.
func TestFailoverOffRailDown(t *testing.T) {
	for _, which := range []string{"am-rail", "other-rail", "both", "both-idle"} {
		t.Run(which, func(t *testing.T) {
			foOffRailFault(t, which == "am-rail", true, strings.HasPrefix(which, "both"), which == "both-idle")
		})
	}
}

// foOffRailFault black-holes (or with down, sets down) the rail of the
// endpoint's AM lane (amRail) or the other one, or with both both rails.
// With idle, the links go down while nothing of ours is in flight in the
// transports: the requests outstanding wait for the peer's answers
// (rendezvous sends the peer has not received, a flush behind them), so
// no work request of ours runs out of retries and only the lanes' lost
// routes can end the endpoint.
func foOffRailFault(t *testing.T, amRail, down, both, idle bool) {
	cfg := Config{Failover: failover.Policy{Mode: failover.Off}, ErrorMode: ErrorModePeer}
	env := []string{EnvFailover + "=off", EnvErrMode + "=peer"}
	nd, rails := foRailsWorld(t, "fooffsink", cfg, 2*time.Second, env...)
	ep := nd.eps[1]
	if len(ep.lanes) != 2 || ep.fo != nil || len(ep.rails) != 2 {
		t.Fatalf("%d lanes, %d rails, sequenced %v: want two striped rails without failover", len(ep.lanes), len(ep.rails), ep.fo != nil)
	}
	kb := make([]byte, 4096)
	kr := nd.w.TagRecv(kb, mkTag(1, foTagKey), exact, nil)
	nd.must(nd.wait(kr))
	rk, err := ep.UnpackRKey(kb[8:kr.Info().Length])
	nd.must(err)
	t.Cleanup(func() { rk.Close() })
	s := &foStream{nd: nd, ep: ep, rk: rk, raddr: binary.LittleEndian.Uint64(kb), fetch: make([]uint64, 0, 150)}
	track := func(start func(p *Params) *Request) {
		idx := len(s.reqs)
		s.reqs = append(s.reqs, start(&Params{UserData: idx, Callback: func(r *Request) { s.done[r.UserData().(int)]++ }}))
		s.done = append(s.done, 0)
	}
	// each put writes a region of its own and each get reads into a
	// buffer of its own: the chunks of two transfers to the same bytes
	// would land from two rails at once
	putBuf := pattern(foOffStripe, 3)
	nPut, nGet := 0, 0
	rail := -1
	for i, a := range rails.A {
		if (a.Link() == ep.lanes[ep.amLane].attr.Device) == amRail {
			rail = i
		}
	}
	var injected time.Time
	failedAt := -1 // the first request started after the endpoint failed
	const maxOps = 4000
	deadline := time.Now().Add(90 * time.Second)
	for k := 0; k < maxOps && time.Now().Before(deadline); k++ {
		if failedAt < 0 && ep.Err() != nil {
			failedAt = len(s.reqs)
		}
		if failedAt >= 0 && (idle || len(s.reqs) >= failedAt+20) {
			break
		}
		switch {
		case idle && k > 150:
			// nothing more: a post the transport takes before it sees
			// the link down would run out of retries and end the
			// endpoint by itself (the loop's bound: 40 s)
			time.Sleep(10 * time.Millisecond)
		case k%9 == 2 && nPut < 4:
			off := uint64(foOffBase + nPut*foOffStripe)
			nPut++
			track(func(p *Params) *Request { return ep.Put(putBuf, s.raddr+off, rk, p) })
		case k%9 == 6 && nGet < 8:
			nGet++
			getBuf := make([]byte, foOffStripe)
			track(func(p *Params) *Request { return ep.Get(getBuf, s.raddr+foOffBase+4*foOffStripe, rk, p) })
		default:
			s.post(k)
		}
		if k == 150 && idle {
			for j := 0; j < 4; j++ {
				track(func(p *Params) *Request {
					return ep.TagSend(seqPayload(j, 100000), mkTag(0, foOffTagUnrecv), p)
				})
			}
			track(func(p *Params) *Request { return ep.Flush(p) })
			// flushes wait for the endpoint to be idle, so for the
			// unanswered sends too
			for stop := time.Now().Add(60 * time.Second); s.outstandingBut(kFlush) > 4; {
				if time.Now().After(stop) {
					for i, d := range s.done {
						if d == 0 {
							t.Logf("request %d (kind %d) outstanding", i, s.reqs[i].kind)
						}
					}
					t.Fatalf("%d requests outstanding, want the 4 the peer does not answer", s.outstandingBut(kFlush))
				}
				nd.w.Progress()
			}
		}
		if k == 150 && down {
			if err := rails.A[rail].SetLink(false); err != nil {
				t.Fatal(err)
			}
			if both {
				if err := rails.A[1-rail].SetLink(false); err != nil {
					t.Fatal(err)
				}
			}
			injected = time.Now()
		}
		if k == 150 && !down {
			err := rails.A[rail].Do(func() error {
				f, err := fault.Drop(rails.A[rail].Link(), fault.Config{OnlyUDPPort: fault.RoCEv2Port, BlackHole: true})
				if err == nil {
					t.Cleanup(func() { f.Close() })
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			injected = time.Now()
		}
		// keep a bounded number of requests outstanding, so that the
		// black hole stalls traffic on both rails
		for j := 0; j < 4 || s.outstanding() > 64 && time.Now().Before(deadline) && ep.Err() == nil; j++ {
			nd.w.Progress()
		}
	}
	if failedAt < 0 {
		t.Fatalf("%d requests, %v after the fault: the endpoint did not fail", len(s.reqs), time.Since(injected))
	}
	s.drainAll(t)
	epErr := ep.Err()
	failed := 0
	for i, r := range s.reqs {
		err := r.Err()
		if err != nil {
			failed++
		}
		if i < failedAt && err != nil && (r.kind == kAtomic || r.kind == kAtomicFetch) &&
			!errors.Is(err, failover.ErrOutcomeUnknown) && !errors.Is(err, uct.ErrCanceled) {
			// posted before the failure (else it was still queued and
			// canceled): the target may have applied it
			t.Errorf("atomic %d failed with %v, which does not say its outcome is unknown", i, err)
		}
		if (i >= failedAt || r.kind == kFlush && err != nil) && !errors.Is(err, epErr) {
			t.Errorf("request %d (kind %d; the endpoint failed before the %dth) completed with %v, not the endpoint's %v", i, r.kind, failedAt, err, epErr)
		}
	}
	t.Logf("endpoint failed with %v; %d requests, %d failed", epErr, len(s.reqs), failed)
}

// outstandingBut counts the stream's requests not completed yet, but
// those of kind k.
func (s *foStream) outstandingBut(k reqKind) int {
	n := 0
	for i, d := range s.done {
		if d == 0 && s.reqs[i].kind != k {
			n++
		}
	}
	return n
}

// outstanding counts the stream's requests not completed yet.
func (s *foStream) outstanding() int {
	n := 0
	for _, d := range s.done {
		if d == 0 {
			n++
		}
	}
	return n
}

func init() {
	// foidle: without device watchers (so that only its own posts can
	// tell it a link is down), send rank 0 one tag message (sequenced
	// when the failover mode is on, which turns rank 0's channel on),
	// then progress until stdin closes or says anything (bounded: two
	// minutes).
	childRoles["foidle"] = func(nd *node) error {
		nd.w.unwatchLinks()
		if err := nd.wait(nd.eps[0].TagSend([]byte("hello"), mkTag(1, foTagKey), nil)); err != nil {
			return err
		}
		var end atomic.Bool
		go func() {
			bufio.NewReader(os.Stdin).ReadString('\n')
			end.Store(true)
		}()
		for stop := time.Now().Add(2 * time.Minute); !end.Load() && time.Now().Before(stop); {
			nd.w.Progress()
		}
		return nil
	}
}

// TestFailoverOffSequencedRouteLost: our failover is off but the peer's
// is on, so our endpoint is sequenced. The rail of its AM lane goes down:
// a sequenced send refused for the lost route while the other rail is up
// is a lane fault, which with failover off fails the endpoint inside the
// send. The request whose send was refused completes with the endpoint's
// error, as does every other; none is left queued on the failed endpoint.
func TestFailoverOffSequencedRouteLost(t *testing.T) {
	env := []string{EnvFailover + "=any", EnvErrMode + "=peer"}
	nd, rails := foRailsWorld(t, "foidle", Config{ErrorMode: ErrorModePeer}, 2*time.Second, env...)
	w, ep := nd.w, nd.eps[1]
	w.unwatchLinks()
	hello := make([]byte, 16)
	nd.must(nd.wait(w.TagRecv(hello, mkTag(1, foTagKey), exact, nil)))
	w.lock()
	// failover off from now on, the endpoint sequenced: as if the peer
	// alone had it on
	w.cfg.Failover.Mode = failover.Off
	seq, lanes := ep.fo != nil, len(ep.lanes)
	am := ep.amLane
	w.unlock()
	if !seq || lanes != 2 {
		t.Fatalf("sequenced %v, %d lanes: want a sequenced endpoint over two rails", seq, lanes)
	}
	rail := -1
	for i, a := range rails.A {
		if a.Link() == ep.lanes[am].attr.Device {
			rail = i
		}
	}
	if rail < 0 {
		t.Fatalf("the AM lane's device %s is no rail", ep.lanes[am].attr.Device)
	}
	if err := rails.A[rail].SetLink(false); err != nil {
		t.Fatal(err)
	}
	var reqs []*Request
	var done []int
	for stop := time.Now().Add(30 * time.Second); ep.Err() == nil && time.Now().Before(stop); {
		i := len(done)
		done = append(done, 0)
		reqs = append(reqs, ep.TagSend(seqPayload(i, 64), mkTag(0, foTagData), &Params{UserData: i,
			Callback: func(r *Request) { done[r.UserData().(int)]++ }}))
		for j := 0; j < 10; j++ {
			w.Progress()
		}
		time.Sleep(time.Millisecond)
	}
	epErr := ep.Err()
	if epErr == nil {
		t.Fatal("the AM lane's link is down, failover is off, yet the endpoint did not fail")
	}
	nd.progressUntil("every send", func() bool {
		for _, d := range done {
			if d == 0 {
				return false
			}
		}
		return true
	})
	failed := 0
	for i, r := range reqs {
		if done[i] != 1 {
			t.Fatalf("send %d completed %d times", i, done[i])
		}
		if r.Err() != nil {
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("no send failed")
	}
	fmt.Fprintln(nd.kids[1].Stdin, "end")
	t.Logf("endpoint failed with %v; %d sends, %d failed", epErr, len(reqs), failed)
}
