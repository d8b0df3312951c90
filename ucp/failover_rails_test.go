package ucp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/internal/fault"
	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/uct"
)

// Tags and ids of the failover tests.
const (
	foTagData   = 0x700
	foTagKey    = 0x701
	foTagReport = 0x702
	foAM        = 41
	foMemSize   = 1<<20 + 64 // put/get regions, then the atomic word
	foRegion    = 60 << 10
	foWordOff   = 1 << 20
	foGetRegion = 16 // the region rank 0 gets, filled by the child
	foGetSeed   = 99
)

// shareMem maps size bytes in the child, lets fill write them, and sends
// rank 0 their address and packed key on foTagKey.
func shareMem(nd *node, size int, fill func([]byte)) (*Mem, error) {
	mem, err := nd.w.MemMap(make([]byte, size))
	if err != nil {
		return nil, err
	}
	if fill != nil {
		fill(mem.Bytes())
	}
	kb := binary.LittleEndian.AppendUint64(nil, mem.Address())
	if err := nd.wait(nd.eps[0].TagSend(append(kb, mem.PackRKey()...), mkTag(1, foTagKey), nil)); err != nil {
		mem.Close()
		return nil, err
	}
	return mem, nil
}

func init() {
	// fosink: receive the failover tests' stream from rank 0 and check
	// it: tag messages in order, each once, every byte right; active
	// messages each once; then report on foTagReport ("ok" or the
	// problems). Rank 0's Put/Get/atomics target the memory whose
	// address and key go first on foTagKey.
	childRoles["fosink"] = func(nd *node) error {
		ep := nd.eps[0]
		mem, err := shareMem(nd, foMemSize, func(b []byte) {
			copy(b[foGetRegion*foRegion:], pattern(foRegion, foGetSeed)) // what rank 0 gets
		})
		if err != nil {
			return err
		}
		defer mem.Close()
		var problems []string
		amGot := map[int]int{}
		amCheck := func(b []byte) {
			i := int(binary.LittleEndian.Uint64(b))
			if !bytes.Equal(b, seqPayload(i, len(b))) {
				problems = append(problems, fmt.Sprintf("active message %d damaged", i))
			}
			amGot[i]++
		}
		nd.w.SetAMHandler(foAM, func(m *AMMessage) {
			if !m.Rndv {
				amCheck(m.Data)
				return
			}
			b := make([]byte, m.Length)
			m.RecvData(b, &Params{Callback: func(r *Request) {
				if r.Err() != nil {
					problems = append(problems, fmt.Sprintf("active message data: %v", r.Err()))
					return
				}
				amCheck(b)
			}})
		})
		buf := make([]byte, 1<<20)
		next := 0
		for {
			r := nd.w.TagRecv(buf, 0, 0, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := r.Wait(ctx)
			cancel()
			if err != nil {
				nd.w.lock()
				f := ep.fo
				err = fmt.Errorf("after %d tag messages: %w (log next %d acked %d, delivered %d held %d, fov %+v, am %d rma %d, queue %d inflight %d stalled %d)",
					next, err, f.log.Next(), f.log.Acked(), f.win.Delivered(), f.win.Held(), f.fov, ep.amLane, ep.rmaLane, ep.queue.n, ep.inflight.n, ep.stalled.n)
				nd.w.unlock()
				return err
			}
			n := r.Info().Length
			if uint32(r.Info().Tag) == tagQuit {
				nTags, nAM := int(binary.LittleEndian.Uint64(buf)), int(binary.LittleEndian.Uint64(buf[8:]))
				ctx, cancel := testCtx()
				for len(amGot) < nAM && ctx.Err() == nil {
					nd.w.Progress()
				}
				cancel()
				if next != nTags {
					problems = append(problems, fmt.Sprintf("%d tag messages, want %d", next, nTags))
				}
				for i := 0; i < nAM; i++ {
					if amGot[i] != 1 {
						problems = append(problems, fmt.Sprintf("active message %d delivered %d times", i, amGot[i]))
					}
				}
				rep := "ok"
				if len(problems) > 0 {
					rep = strings.Join(problems[:min(len(problems), 10)], "; ")
				}
				if err := nd.wait(ep.TagSend([]byte(rep), mkTag(1, foTagReport), nil)); err != nil {
					return err
				}
				if err := nd.wait(ep.Flush(nil)); err != nil { // the report was delivered
					return fmt.Errorf("flush after the report: %w", err)
				}
				return nil
			}
			i := int(binary.LittleEndian.Uint64(buf))
			switch {
			case i != next:
				problems = append(problems, fmt.Sprintf("tag message %d arrived as number %d", i, next))
			case !bytes.Equal(buf[:n], seqPayload(i, n)):
				problems = append(problems, fmt.Sprintf("tag message %d (%d bytes) damaged", i, n))
			}
			next = i + 1
		}
	}
}

// foRailsWorld is railsWorld with the endpoints' timeout (which bounds
// how long an rc lane retries before it reports its fault) set to
// timeout, the child's too.
func foRailsWorld(t *testing.T, role string, cfg Config, timeout time.Duration, env ...string) (*node, *netns.Rails) {
	t.Helper()
	t.Setenv(epTimeoutEnv, timeout.String())
	rails, err := netns.NewRails(t, 2)
	if err != nil {
		t.Fatal(err)
	}
	env = append([]string{epTimeoutEnv + "=" + timeout.String()}, env...)
	return railsWorldOn(t, rails, role, cfg, env...), rails
}

// foStream is the operations a failover test posts to a fosink child, and
// what it checks when they are done.
type foStream struct {
	nd    *node
	ep    *Endpoint
	rk    *RKey
	raddr uint64
	reqs  []*Request
	done  []int // completions per request (callbacks)
	nTags int
	nAM   int
	puts  [][]byte // region i's data
	gets  [][]byte // what each get read
	fetch []uint64
}

// post posts operation k of the stream: mostly tag messages of every
// protocol (a synchronous one every 25th), then active messages of every
// protocol, puts of their own region, gets of a region the child filled,
// flushes and atomic fetch-adds.
func (s *foStream) post(k int) {
	idx := len(s.reqs)
	p := &Params{UserData: idx, Callback: func(r *Request) { s.done[r.UserData().(int)]++ }}
	var r *Request
	switch {
	case k%7 == 3 && s.nAM < 40:
		r = s.ep.AMSend(foAM, []byte("hdr"), seqPayload(s.nAM, []int{16, 20000, 300000}[s.nAM%3]), p)
		s.nAM++
	case k%11 == 5 && len(s.puts) < 16:
		b := pattern(foRegion, byte(len(s.puts)+1))
		r = s.ep.Put(b, s.raddr+uint64(len(s.puts)*foRegion), s.rk, p)
		s.puts = append(s.puts, b)
	case k%13 == 7 && len(s.gets) < 12:
		b := make([]byte, foRegion)
		r = s.ep.Get(b, s.raddr+foGetRegion*foRegion, s.rk, p)
		s.gets = append(s.gets, b)
	case k%50 == 49:
		r = s.ep.Flush(p)
	case k%3 == 1 && len(s.fetch) < 150:
		s.fetch = append(s.fetch, 0)
		r = s.ep.AtomicFetch(AtomicAdd, 1, 0, &s.fetch[len(s.fetch)-1], s.raddr+foWordOff, s.rk, p)
	case s.nTags%25 == 24:
		r = s.ep.TagSendSync(seqPayload(s.nTags, 64), mkTag(0, foTagData), p)
		s.nTags++
	default:
		r = s.ep.TagSend(seqPayload(s.nTags, streamSizes[s.nTags%len(streamSizes)]), mkTag(0, foTagData), p)
		s.nTags++
	}
	s.reqs = append(s.reqs, r)
	s.done = append(s.done, 0)
}

// check waits for every request and checks that each succeeded once,
// that the target's memory holds every put and the atomic word every
// add, each add fetched a distinct value, and that the child saw every
// message once and in order.
func (s *foStream) check(t *testing.T) {
	nd := s.nd
	for i, r := range s.reqs {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := r.Wait(ctx)
		cancel()
		if err != nil {
			nd.w.lock()
			ep := s.ep
			t.Logf("request %d kind %d list inflight %v stalled %v queue %v; ep err %v am %d rma %d; queue %d inflight %d stalled %d",
				i, r.kind, r.list == &ep.inflight, r.list == &ep.stalled, r.list == &ep.queue, ep.err, ep.amLane, ep.rmaLane,
				ep.queue.n, ep.inflight.n, ep.stalled.n)
			if f := ep.fo; f != nil {
				t.Logf("log next %d acked %d; delivered %d held %d; fov %+v; xredo %v xlane %d comp %d", f.log.Next(), f.log.Acked(),
					f.win.Delivered(), f.win.Held(), f.fov, r.xredo, r.xlane, r.comp.Count)
			}
			nd.w.unlock()
			t.Fatalf("request %d: %v", i, err)
		}
	}
	nd.must(nd.wait(s.ep.Flush(nil)))
	nd.progressUntil("callbacks", func() bool {
		for _, d := range s.done {
			if d == 0 {
				return false
			}
		}
		return true
	})
	for i, d := range s.done {
		if d != 1 {
			t.Fatalf("request %d completed %d times", i, d)
		}
	}
	seen := map[uint64]bool{}
	for i, v := range s.fetch {
		if v >= uint64(len(s.fetch)) || seen[v] {
			t.Fatalf("atomic %d fetched %d: an add was applied twice or lost", i, v)
		}
		seen[v] = true
	}
	for i, b := range s.gets {
		if !bytes.Equal(b, pattern(foRegion, foGetSeed)) {
			t.Fatalf("get %d read the wrong bytes", i)
		}
	}
	back := make([]byte, foMemSize)
	nd.must(nd.wait(s.ep.Get(back, s.raddr, s.rk, nil)))
	for i, b := range s.puts {
		if !bytes.Equal(back[i*foRegion:(i+1)*foRegion], b) {
			t.Fatalf("put %d is not in the target's memory", i)
		}
	}
	if v := binary.LittleEndian.Uint64(back[foWordOff:]); v != uint64(len(s.fetch)) {
		t.Fatalf("the atomic word is %d after %d adds", v, len(s.fetch))
	}
	q := binary.LittleEndian.AppendUint64(nil, uint64(s.nTags))
	q = binary.LittleEndian.AppendUint64(q, uint64(s.nAM))
	rep := make([]byte, 4096)
	rr := nd.w.TagRecv(rep, mkTag(1, foTagReport), exact, nil)
	nd.must(nd.wait(s.ep.TagSend(q, mkTag(0, tagQuit), nil)))
	nd.must(nd.wait(rr))
	if got := string(rep[:rr.Info().Length]); got != "ok" {
		t.Fatalf("the receiver saw: %s", got)
	}
	nd.exitProgress(1)
}

// exitProgress waits for rank r to exit with status 0, progressing our
// worker meanwhile (the child's last flush waits for our acknowledgement).
func (nd *node) exitProgress(r int) {
	nd.t.Helper()
	done := make(chan error, 1)
	go func() { done <- nd.procs[r].Wait() }()
	ctx, cancel := testCtx()
	defer cancel()
	for {
		select {
		case err := <-done:
			if err != nil {
				nd.t.Fatalf("rank %d: %v", r, err)
			}
			return
		default:
		}
		if ctx.Err() != nil {
			nd.t.Fatalf("rank %d did not exit", r)
		}
		if nd.w.Progress() == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// foSetup connects a fosink child across two rails with failover to the
// same transport and rendezvous scheme scheme; it returns the stream
// and the index of the rail that carries the endpoint's active messages.
func foSetup(t *testing.T, scheme string) (*foStream, *netns.Rails, int, *[]failover.Event) {
	cfg := Config{Failover: failover.Policy{Mode: failover.SameTransport}, ErrorMode: ErrorModePeer}
	env := []string{EnvFailover + "=same", EnvErrMode + "=peer", EnvRndvScheme + "=" + scheme}
	if scheme == "put" {
		cfg.RndvScheme = RndvPut
	}
	nd, rails := foRailsWorld(t, "fosink", cfg, 2*time.Second, env...)
	ep := nd.eps[1]
	if len(ep.lanes) != 2 || ep.fo == nil {
		t.Fatalf("%d lanes, sequenced %v: want two rails with failover", len(ep.lanes), ep.fo != nil)
	}
	evs := new([]failover.Event)
	nd.w.SetFailoverHandler(func(e failover.Event) { *evs = append(*evs, e) })
	kb := make([]byte, 4096)
	kr := nd.w.TagRecv(kb, mkTag(1, foTagKey), exact, nil)
	nd.must(nd.wait(kr))
	rk, err := ep.UnpackRKey(kb[8:kr.Info().Length])
	nd.must(err)
	t.Cleanup(func() { rk.Close() })
	rail := -1
	for i, a := range rails.A {
		if a.Link() == ep.lanes[ep.amLane].attr.Device {
			rail = i
		}
	}
	if rail < 0 {
		t.Fatalf("the AM lane's device %s is no rail", ep.lanes[ep.amLane].attr.Device)
	}
	return &foStream{nd: nd, ep: ep, rk: rk, raddr: binary.LittleEndian.Uint64(kb), fetch: make([]uint64, 0, 150)}, rails, rail, evs
}

// TestFailoverRailDown: two namespaces joined by two rails, failover to
// the same transport. The rail that carries the endpoint's traffic goes
// down (its link, in our namespace: LNIC_FAILED here, RNIC_FAILED for
// the peer if it saw its end lose carrier first) while tag messages of every protocol
// (eager short, bcopy, the zero-copy range, rendezvous by the scheme
// under test, synchronous sends), active messages (one fragment,
// fragments, rendezvous), puts and atomics are in flight and more are
// posted. Every request completes once without error, the receiver gets
// every message once and in order, the memory holds every put and every
// add once, and the failover is reported with the failed rail.
func TestFailoverRailDown(t *testing.T) {
	for _, scheme := range []string{"get", "put"} {
		t.Run(scheme, func(t *testing.T) {
			s, rails, rail, evs := foSetup(t, scheme)
			nd := s.nd
			const total = 600
			for k := 0; k < total; k++ {
				s.post(k)
				if k == total/3 {
					if err := rails.A[rail].SetLink(false); err != nil {
						t.Fatal(err)
					}
				}
				for j := 0; j < 4; j++ {
					nd.w.Progress()
				}
			}
			s.check(t)
			st := nd.w.Stats()
			if len(*evs) == 0 || st.FailedOver == 0 {
				t.Fatalf("no failover reported (%d events, stats %+v)", len(*evs), st)
			}
			e := (*evs)[0]
			// whichever end saw the link down first moved both: ours
			// (local NIC) or the peer's, whose end of the veth lost its
			// carrier (remote NIC)
			if e.Kind != failover.FailedOver || e.From.Device != rails.A[rail].Link() || e.To.Device == e.From.Device ||
				!errors.Is(e.Cause, uct.ErrLocalNICFailed) && !errors.Is(e.Cause, uct.ErrRemoteNICFailed) {
				t.Fatalf("event %v: want a failover from %s for a NIC down", e, rails.A[rail].Link())
			}
			t.Logf("%v; stats: failed over %d, replayed %d, duplicates %d", e, st.FailedOver, st.Replayed, st.Duplicates)
		})
	}
}

// drainAll waits until every request of the stream completed, whatever
// its status, and checks that each completed once.
func (s *foStream) drainAll(t *testing.T) {
	t.Helper()
	s.nd.progressUntil("every request", func() bool {
		for i, r := range s.reqs {
			if !r.Done() || s.done[i] == 0 {
				return false
			}
		}
		return true
	})
	for i, d := range s.done {
		if d != 1 {
			t.Fatalf("request %d completed %d times", i, d)
		}
	}
}

// TestFailoverRailsAllDown: both rails go down, one after the other,
// mid-stream. The endpoint fails over from the first, then has no lane
// left: it fails with the second lane's status (its local link is down,
// LNIC_FAILED), the handler hears that no lane was left, and every
// request completes once.
func TestFailoverRailsAllDown(t *testing.T) {
	s, rails, rail, evs := foSetup(t, "get")
	nd := s.nd
	const total = 300
	for k := 0; k < total; k++ {
		s.post(k)
		if k == total/3 {
			nd.must(rails.A[rail].SetLink(false))
		}
		if k == total/2 {
			nd.must(rails.A[1-rail].SetLink(false))
		}
		for j := 0; j < 4; j++ {
			nd.w.Progress()
		}
	}
	s.drainAll(t)
	err := s.ep.Err()
	if !errors.Is(err, uct.ErrLocalNICFailed) {
		t.Fatalf("endpoint error %v, want the local NIC failed", err)
	}
	var exhausted bool
	for _, e := range *evs {
		exhausted = exhausted || e.Kind == failover.Exhausted
	}
	if !exhausted {
		t.Fatalf("events %v: none says no lane was left", *evs)
	}
	t.Logf("endpoint failed with %v; events %v", err, *evs)
}

// TestFailoverPeerKilled: the peer process is SIGKILLed mid-stream over
// two healthy rails. That is no lane's fault: the endpoint fails with
// uct.ErrPeerFailed, nothing fails over, and every request completes
// once.
func TestFailoverPeerKilled(t *testing.T) {
	s, _, _, evs := foSetup(t, "get")
	nd := s.nd
	const total = 200
	for k := 0; k < total; k++ {
		s.post(k)
		if k == total/2 {
			nd.kill(1)
		}
		for j := 0; j < 4; j++ {
			nd.w.Progress()
		}
	}
	s.drainAll(t)
	if err := s.ep.Err(); !errors.Is(err, uct.ErrPeerFailed) {
		t.Fatalf("endpoint error %v, want the peer failed", err)
	}
	for _, e := range *evs {
		if e.Kind == failover.FailedOver {
			t.Fatalf("failed over for a dead peer: %v", e)
		}
	}
	if n := nd.w.Stats().FailedOver; n != 0 {
		t.Fatalf("FailedOver = %d for a dead peer", n)
	}
}

// TestFailoverRailBlackHole: an eBPF program black-holes every RoCE
// packet arriving on the rail that carries the endpoint's traffic (its
// link stays up) while the stream of TestFailoverRailDown is in flight.
// The lane's work requests exceed their retries while the other rail is
// up: the lane has lost its route (uct.ErrRouteLost), the endpoint moves
// to the other rail, and nothing is lost, duplicated or reordered.
func TestFailoverRailBlackHole(t *testing.T) {
	s, rails, rail, evs := foSetup(t, "get")
	nd := s.nd
	const total = 600
	for k := 0; k < total; k++ {
		s.post(k)
		if k == total/3 {
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
		}
		for j := 0; j < 4; j++ {
			nd.w.Progress()
		}
	}
	s.check(t)
	if len(*evs) == 0 {
		t.Fatal("no failover reported")
	}
	e := (*evs)[0]
	if e.Kind != failover.FailedOver || e.From.Device != rails.A[rail].Link() || !errors.Is(e.Cause, uct.ErrRouteLost) {
		t.Fatalf("event %v: want a failover from %s for a lost route", e, rails.A[rail].Link())
	}
	t.Logf("%v", e)
}
