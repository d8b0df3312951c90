package ucp

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// Tests of what happens after Purge and to messages from a failed peer
// that is still alive: real processes, SIGKILL, SIGSTOP/SIGCONT.

const (
	tagLate = 40 // sent by the zombie after SIGCONT
	amLate  = 41 // active messages of the zombie after SIGCONT
	tagAddr = 42 // the zombie's worker address

	anyTagMask = ^uint64(0xffffffff) // a receive from one rank, any tag
)

func init() {
	// zombie: wait for SIGCONT (the test stops us long enough for our
	// endpoint to fail on rank 0), then keep sending rank 0 every kind
	// of message: eager tag messages (short and bcopy), rendezvous tag
	// messages, active messages in one fragment, in fragments and by
	// rendezvous (UCGO_RNDV_THRESH must be set above two fragments).
	// Send errors are ignored; the test kills us.
	childRoles["zombie"] = func(nd *node) error {
		cont := make(chan os.Signal, 1)
		signal.Notify(cont, syscall.SIGCONT)
		if err := nd.wait(nd.eps[0].TagSend(nd.w.Address(), mkTag(nd.rank, tagAddr), nil)); err != nil {
			return err
		}
		progressFor := func(d time.Duration) {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			for ctx.Err() == nil {
				if nd.w.Progress() == 0 {
					c, cc := context.WithTimeout(ctx, time.Millisecond)
					nd.w.Wait(c)
					cc()
				}
			}
		}
		for len(cont) == 0 {
			progressFor(10 * time.Millisecond)
		}
		ep := nd.eps[0]
		small, mid, big := pattern(8, 1), pattern(3000, 2), pattern(100000, 3)
		amFrags, amBig := pattern(2*ep.MaxAM()+10, 4), pattern(2<<20, 5)
		for {
			tag := mkTag(nd.rank, tagLate)
			for _, r := range []*Request{
				ep.TagSend(small, tag, nil),
				ep.TagSend(mid, tag, nil),
				ep.TagSend(big, tag, nil),
				ep.AMSend(amLate, nil, small, nil),
				ep.AMSend(amLate, nil, amFrags, nil),
				ep.AMSend(amLate, nil, amBig, nil),
			} {
				r.Release()
			}
			progressFor(5 * time.Millisecond)
		}
	}
}

// TestPurgeFailedSender stops rank 1 until keepalive fails its endpoint
// as silent, then continues it: the process is alive and sends every
// kind of message over its shm lane, which still delivers. They are
// dropped and counted (WorkerStats.FailedDrops), never queued as
// unexpected, never matched after ResumeMatching or Purge, and no
// rendezvous data is fetched and no AM handler runs; after Purge they are
// counted as ClosedDrops. Then we connect to the same process again: its
// messages reach the new endpoint and are matched.
// Over shm only: an rc peer's messages stop arriving once our side of the
// failed endpoint closed its queue pair.
func TestPurgeFailedSender(t *testing.T) {
	for _, tls := range []string{"shm"} {
		for _, x := range []struct {
			resolve string
			safe    bool
		}{{"resume", false}, {"purge", false}, {"purge", true}} {
			resolve := x.resolve
			t.Run(fmt.Sprintf("%s/%s/safe=%v", tls, resolve, x.safe), func(t *testing.T) {
				// We beat every 100 ms, rank 1 every 500 ms, so that we
				// give it 1.5 s (three of its intervals) before judging
				// it silent: on a loaded machine a healthy rank 1 (the
				// new endpoint after Purge) can miss 300 ms.
				const ival, peerIval = 100 * time.Millisecond, 500 * time.Millisecond
				c := errCase{cfg: Config{ErrorMode: ErrorModePeer, KeepaliveInterval: ival, DetectSilentPeers: true, ThreadSafe: x.safe}}
				nd := world(t, 2, "zombie", tlsConfig(t, c.cfg, tls), append(c.env(tls),
					rankEnvPrefix+"1="+EnvKeepalive+"="+peerIval.String()+";"+EnvRndvThresh+"=1m")...)
				testPurgeFailedSender(t, nd, resolve)
			})
		}
	}
}

func testPurgeFailedSender(t *testing.T, nd *node, resolve string) {
	w, ep1 := nd.w, nd.eps[1]
	handled := 0
	w.SetAMHandler(amLate, func(m *AMMessage) { handled++ })
	addr := make([]byte, 4096)
	ra := w.TagRecv(addr, mkTag(1, tagAddr), exact, nil)
	nd.must(nd.wait(ra))
	addr = addr[:ra.Info().Length]
	nd.progressUntil("a heartbeat from rank 1", func() bool { return armed(ep1) })
	// receives that the zombie's messages would match
	rB := w.TagRecv(make([]byte, 200000), mkTag(1, tagLate), exact, nil)
	rT := w.TagRecv(make([]byte, 200000), mkTag(1, 0), anyTagMask, nil)
	rW := w.TagRecv(make([]byte, 200000), mkTag(0, tagLate), anySrc, nil)

	nd.must(nd.procs[1].Process.Signal(syscall.SIGSTOP))
	nd.progressUntil("the stopped peer's failure", func() bool { return ep1.Err() != nil })
	failedWith(t, "stopped peer", ep1.Err(), uct.ErrEndpointTimeout)
	before := w.Stats()
	if _, u := w.m.Len(); u != 0 {
		t.Fatalf("%d unexpected messages before the zombie sent any", u)
	}
	nd.must(nd.procs[1].Process.Signal(syscall.SIGCONT))
	nd.progressUntil("dropped messages of every kind", func() bool {
		d, b := w.Stats().FailedDrops, before.FailedDrops
		return d.TagEager >= b.TagEager+2 && d.TagRndv > b.TagRndv && d.AM > b.AM && d.AMFrag > b.AMFrag && d.AMRndv > b.AMRndv
	})
	if _, u := w.m.Len(); u != 0 {
		t.Fatalf("%d messages of the failed peer queued as unexpected", u)
	}
	if handled != 0 {
		t.Fatalf("AM handler ran %d times for a failed peer", handled)
	}
	if !w.MatchingSuspended() {
		t.Fatal("matching not suspended")
	}
	for _, x := range []struct {
		what string
		r    *Request
	}{{"exact receive", rB}, {"any-tag receive", rT}, {"wildcard receive", rW}} {
		toldPending(t, x.what, x.r)
	}
	// posted now, while suspended: nothing can match it any more
	if r := w.TagRecv(make([]byte, 8), mkTag(1, tagLate), exact, nil); !r.Done() {
		t.Fatal("receive from the failed peer posted while suspended did not fail at once")
	} else {
		failedWith(t, "receive from the failed peer posted while suspended", r.Err(), uct.ErrEndpointTimeout)
	}

	if resolve == "resume" {
		w.ResumeMatching()
		n := w.Stats().FailedDrops.Total()
		nd.progressUntil("more dropped messages", func() bool { return w.Stats().FailedDrops.Total() > n })
		pending(t, "exact receive after resume", rB)
		pending(t, "any-tag receive after resume", rT)
		pending(t, "wildcard receive after resume", rW)
		if _, u := w.m.Len(); u != 0 {
			t.Fatalf("%d unexpected messages after resume", u)
		}
	}
	w.Purge(ep1)
	failedWith(t, "exact receive after purge", nd.wait(rB), uct.ErrEndpointTimeout)
	failedWith(t, "any-tag receive after purge", nd.wait(rT), uct.ErrEndpointTimeout)
	pending(t, "wildcard receive after purge", rW)
	if r := w.TagRecv(make([]byte, 8), mkTag(1, 0), anyTagMask, nil); !r.Done() {
		t.Fatal("receive from the purged peer did not fail at once")
	} else {
		failedWith(t, "receive from the purged peer", r.Err(), uct.ErrEndpointTimeout)
	}
	closed := w.Stats().ClosedDrops
	nd.progressUntil("messages for the purged endpoint", func() bool { return w.Stats().ClosedDrops > closed+10 })
	if _, u := w.m.Len(); u != 0 {
		t.Fatalf("%d unexpected messages after purge", u)
	}
	if handled != 0 {
		t.Fatalf("AM handler ran %d times for a failed peer", handled)
	}
	pending(t, "wildcard receive", rW)
	rW.Cancel()

	// The process is alive: a new endpoint to it (same rank) matches its
	// messages again, eager and rendezvous.
	ep1c, err := w.Connect(addr, EPParams{SourceTag: mkTag(1, 0), Timeout: testEPParams()})
	nd.must(err)
	if ep1c == ep1 {
		t.Fatal("Connect returned the purged endpoint")
	}
	for _, x := range []struct {
		n    int
		seed byte
	}{{8, 1}, {3000, 2}, {100000, 3}} { // the zombie's eager short, bcopy and rendezvous messages
		n := x.n
		buf := make([]byte, 200000)
		r := w.TagRecv(buf, mkTag(1, tagLate), exact, nil)
		for {
			nd.must(nd.wait(r))
			if r.Info().Length == n {
				break
			}
			r = w.TagRecv(buf, mkTag(1, tagLate), exact, nil)
		}
		if r.Info().Sender != ep1c || !bytes.Equal(buf[:n], pattern(n, x.seed)) {
			t.Fatalf("message of %d bytes from %v: wrong sender or data", n, r.Info().Sender.Name())
		}
	}
	nd.progressUntil("an active message from the new endpoint", func() bool { return handled > 0 })
	if ep1c.Err() != nil {
		t.Fatalf("new endpoint failed: %v", ep1c.Err())
	}
}

// TestPurgeNewRecv kills rank 1 and checks the receives posted at each
// stage: before the failure, after it, after Purge, and after a new
// process joins at rank 1. A receive that can only match the dead peer
// fails at once once the worker knows of the failure (Peer mode) or of
// the purge (every mode); wildcards and receives for ranks without an
// endpoint stay posted; the new rank 1 is matched as any healthy peer
// (over shm: the new process does not join rc's network namespaces).
func TestPurgeNewRecv(t *testing.T) {
	for _, tls := range errTLS {
		for _, c := range []errCase{
			{"suspend", Config{ErrorMode: ErrorModePeer}, ""},
			{"never-suspend", Config{ErrorMode: ErrorModePeer, MatchingMode: MatchingNeverSuspend}, ""},
			{"none", Config{ErrorMode: ErrorModeNone}, ""},
		} {
			t.Run(tls+"/"+c.name, func(t *testing.T) {
				testPurgeNewRecv(t, tls, c)
			})
		}
	}
}

func testPurgeNewRecv(t *testing.T, tls string, c errCase) {
	nd := tlsWorld(t, tls, 2, "echo", c.cfg, c.env(tls)...)
	w, ep1 := nd.w, nd.eps[1]
	peer := c.cfg.ErrorMode == ErrorModePeer
	suspend := peer && c.cfg.MatchingMode == MatchingSuspend
	errEcho(t, nd, 1, 5)

	rOld := w.TagRecv(make([]byte, 8), mkTag(1, tagB), exact, nil)
	nd.kill(1)
	nd.progressUntil("the failure", func() bool { return ep1.Err() != nil })
	failedWith(t, "endpoint", ep1.Err(), uct.ErrPeerFailed)

	// before Purge
	rNow := w.TagRecv(make([]byte, 8), mkTag(1, tagB), exact, nil)
	rNowT := w.TagRecv(make([]byte, 8), mkTag(1, 0), anyTagMask, nil)
	rW := w.TagRecv(make([]byte, 8), mkTag(0, tagB), anySrc, nil)
	switch {
	case suspend:
		toldPending(t, "receive posted before the failure", rOld)
		toldPending(t, "wildcard receive", rW)
	case peer:
		failedWith(t, "receive posted before the failure", nd.wait(rOld), uct.ErrPeerFailed)
		pending(t, "wildcard receive", rW)
	default:
		pending(t, "receive posted before the failure", rOld)
		pending(t, "wildcard receive", rW)
	}
	for _, r := range []*Request{rNow, rNowT} {
		if peer {
			if !r.Done() {
				t.Fatal("receive from the failed peer did not fail at once")
			}
			failedWith(t, "receive from the failed peer", r.Err(), uct.ErrPeerFailed)
		} else {
			// error mode none: the worker does not act on the failure
			pending(t, "receive from the failed peer", r)
		}
	}

	w.Purge(ep1)
	if w.MatchingSuspended() {
		t.Fatal("suspended after Purge")
	}
	for _, r := range []*Request{rOld, rNow, rNowT} {
		failedWith(t, "receive from the peer after purge", nd.wait(r), uct.ErrPeerFailed)
	}
	pending(t, "wildcard receive after purge", rW)
	for i, x := range []struct {
		tag, mask uint64
	}{{mkTag(1, tagB), exact}, {mkTag(1, tagData), exact}, {mkTag(1, 0), anyTagMask}} {
		r := w.TagRecv(make([]byte, 8), x.tag, x.mask, nil)
		if !r.Done() {
			t.Fatalf("receive %d from the purged peer did not fail at once", i)
		}
		failedWith(t, fmt.Sprintf("receive %d from the purged peer", i), r.Err(), uct.ErrPeerFailed)
	}
	rW2 := w.TagRecv(make([]byte, 8), mkTag(0, tagB), anySrc, nil)
	pending(t, "wildcard receive posted after purge", rW2)
	rNone := w.TagRecv(make([]byte, 8), mkTag(5, tagB), exact, nil)
	pending(t, "receive from a rank without endpoint", rNone)
	if tls != "shm" {
		for _, r := range []*Request{rW, rW2, rNone} {
			r.Cancel()
		}
		return
	}

	// A new process takes rank 1; once connected with rank 1's source
	// tag, receives for rank 1 wait for it and match its messages.
	ep1b := nd.rejoin(t, 1, "echo", c.env(tls)...)
	if ep1b == ep1 {
		t.Fatal("Connect returned the purged endpoint")
	}
	buf := make([]byte, 64)
	r := w.TagRecv(buf, mkTag(1, tagData), exact, nil)
	pending(t, "receive from the new rank 1", r)
	nd.must(nd.wait(ep1b.TagSend([]byte("again"), mkTag(0, tagData), nil)))
	nd.must(nd.wait(r))
	recvd(t, nd, "receive from the new rank 1", r, buf, "again", ep1b)
	errEcho(t, nd, 1, 20)
	for _, r := range []*Request{rW, rW2, rNone} {
		pending(t, "receive nobody sends to", r)
		r.Cancel()
	}
	nd.quit(1)
	nd.exitOK(1)
}

// TestPurgeRejoinBeforePurge: a new process takes rank 1 while the dead
// rank 1's failure is still pending. Receives name ranks, not endpoints:
// receives for rank 1 wait for the new endpoint (told of the pending
// failure, since the dead endpoint had that rank too), its messages are
// queued while matching is suspended, and Purge of the dead endpoint
// fails none of them and restarts matching.
func TestPurgeRejoinBeforePurge(t *testing.T) {
	c := errCase{cfg: Config{ErrorMode: ErrorModePeer}}
	nd := tlsWorld(t, "shm", 2, "echo", c.cfg, c.env("shm")...)
	w, ep1 := nd.w, nd.eps[1]
	errEcho(t, nd, 1, 5)
	rOld := w.TagRecv(make([]byte, 8), mkTag(1, tagB), exact, nil)
	nd.kill(1)
	nd.progressUntil("the failure", func() bool { return ep1.Err() != nil })
	toldPending(t, "receive posted before the failure", rOld)

	ep1b := nd.rejoin(t, 1, "echo", c.env("shm")...)
	buf := make([]byte, 64)
	r := w.TagRecv(buf, mkTag(1, tagData), exact, nil)
	toldPending(t, "receive for rank 1 after the new process joined", r)
	nd.must(nd.wait(ep1b.TagSend([]byte("again"), mkTag(0, tagData), nil)))
	nd.progressUntil("the new rank 1's answer", func() bool {
		_, u := w.m.Len()
		return u == 1
	})
	pending(t, "receive for rank 1 while suspended", r)
	pending(t, "receive posted before the failure", rOld)

	w.Purge(ep1)
	if w.MatchingSuspended() {
		t.Fatal("suspended after Purge")
	}
	recvd(t, nd, "receive from the new rank 1", r, buf, "again", ep1b)
	pending(t, "receive posted before the failure, after purge", rOld)
	errEcho(t, nd, 1, 20)
	rOld.Cancel()
	nd.quit(1)
	nd.exitOK(1)
}

// rejoin starts a new process at rank r (of a world of two: it connects
// to us only) running role, connects to it with rank r's source tag and
// makes it nd.eps[r] and nd.procs[r].
func (nd *node) rejoin(t *testing.T, r int, role string, env ...string) *Endpoint {
	t.Helper()
	if nd.n != 2 {
		t.Fatal("rejoin supports worlds of two")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in, br, a := nd.startChild(exec.Command(self, "-test.run=^$"), role, r, env)
	addrs := []string{hex.EncodeToString(nd.w.Address()), a}
	fmt.Fprintln(in, strings.Join(addrs, " "))
	b, err := hex.DecodeString(a)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := nd.w.Connect(b, EPParams{SourceTag: mkTag(r, 0), Timeout: testEPParams(), ErrorHandler: func(ep *Endpoint, err error) {
		select {
		case nd.errs <- epErr{r, err}:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	var line string
	if _, err := fmt.Fscan(br, &line); err != nil || line != connectedLine {
		t.Fatalf("the new rank %d did not connect: %q, %v", r, line, err)
	}
	nd.eps[r] = ep
	return ep
}

// TestPurgeManyBounded: a worker that connects and purges many endpoints
// keeps no status for them without a source-tag mask and one per rank
// with one (the last purged endpoint's); a receive for a purged rank
// posted later fails at once with the purged endpoint's status.
func TestPurgeManyBounded(t *testing.T) {
	const ranks, n = 3, 60
	for _, mask := range []uint64{0, srcMask} {
		t.Run(fmt.Sprintf("mask=%#x", mask), func(t *testing.T) {
			ctx, err := NewContext(tlsConfig(t, Config{ErrorMode: ErrorModePeer, SourceTagMask: mask}, "shm"))
			if err != nil {
				t.Fatal(err)
			}
			defer ctx.Close()
			a, err := ctx.NewWorker()
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := ctx.NewWorker()
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			for i := range n {
				rank := 1 + i%ranks
				ep, err := a.Connect(b.Address(), EPParams{SourceTag: mkTag(rank, 0)})
				if err != nil {
					t.Fatal(err)
				}
				a.Purge(ep)
				b.Progress()
				want := 0
				if mask != 0 {
					want = min(i+1, ranks)
				}
				a.lock()
				got := len(a.goneErr)
				a.unlock()
				if got != want {
					t.Fatalf("after %d purges: %d saved statuses, want %d", i+1, got, want)
				}
			}
			r := a.TagRecv(make([]byte, 8), mkTag(2, 7), ^uint64(0), nil)
			if mask == 0 {
				if r.Done() {
					t.Fatalf("receive without a mask completed: %v", r.Err())
				}
				r.Cancel()
				return
			}
			if !r.Done() || !errors.Is(r.Err(), uct.ErrCanceled) {
				t.Fatalf("receive for rank 2: done %v err %v, want canceled", r.Done(), r.Err())
			}
		})
	}
}
