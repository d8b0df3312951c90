package ucp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/uct"
)

// Error-model tests: real processes, real SIGKILL and SIGSTOP.
//
// errTLS lists the transport sets the tests run over (UCGO_TLS values):
// shm between processes of this host, rc with every process in a network
// namespace of its own (tlsWorld).
var errTLS = []string{"shm", "rc"}

// tlsWorld is world over the transports named by tls. Over "rc" every
// rank runs in a network namespace of its own, joined through a bridge
// (netns.NewStar; root, the test is skipped otherwise), with a transport
// timeout long enough for a loaded machine (epTimeoutEnv), so that the
// peer's death is detected by the rc transport itself: its connection
// manager link ends, or operations exceed their retries.
func tlsWorld(t testing.TB, tls string, n int, role string, cfg Config, env ...string) *node {
	t.Helper()
	if tls != "rc" {
		return world(t, n, role, tlsConfig(t, cfg, tls), env...)
	}
	star, err := netns.NewStar(t, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(epTimeoutEnv, "30s")
	cfg.Transports = []uct.Component{rc.New(rc.Config{})}
	nd := worldIn(t, star, n, role, cfg, env...)
	for r, ep := range nd.eps {
		if ep == nil {
			continue
		}
		if tr := ep.lanes[0].attr.Transport; len(ep.lanes) != 1 || tr != "rc" {
			t.Fatalf("rank %d: lanes %d, first %s; want one rc lane", r, len(ep.lanes), tr)
		}
	}
	return nd
}

// tlsConfig returns cfg using the transports named by tls.
func tlsConfig(t testing.TB, cfg Config, tls string) Config {
	t.Helper()
	var c Config
	if err := applyEnv(&c, func(k string) string {
		if k == EnvTLS {
			return tls
		}
		return ""
	}); err != nil {
		t.Fatal(err)
	}
	cfg.Transports = c.Transports
	return cfg
}

// errCase is one configuration of the error model.
type errCase struct {
	name    string
	cfg     Config
	resolve string // "resume", "purge" (Suspend) or "" (no suspension)
}

func (c errCase) env(tls string) []string {
	e := []string{EnvTLS + "=" + tls, EnvErrMode + "=" + c.cfg.ErrorMode.String()}
	if c.cfg.MatchingMode == MatchingNeverSuspend {
		e = append(e, EnvMatchingMode+"=never_suspend")
	}
	if c.cfg.RndvScheme == RndvPut {
		e = append(e, EnvRndvScheme+"=put")
	}
	return e
}

var errCases = []errCase{
	{"peer-suspend-resume", Config{ErrorMode: ErrorModePeer}, "resume"},
	{"peer-suspend-purge", Config{ErrorMode: ErrorModePeer}, "purge"},
	{"peer-suspend-purge-rndvput", Config{ErrorMode: ErrorModePeer, RndvScheme: RndvPut}, "purge"},
	{"peer-never-suspend", Config{ErrorMode: ErrorModePeer, MatchingMode: MatchingNeverSuspend}, ""},
	{"none", Config{ErrorMode: ErrorModeNone}, ""},
}

// Tags of the kill test (low 32 bits; the sender's rank is in bits 32-47).
const (
	tagFlood = 20 + iota // victim -> 0, numbered stream
	tagB                 // nobody sends it: a receive that can only match the victim
	tagC                 // victim (before its death) and survivor (after)
	tagD                 // survivor -> 0, specific receive
	tagE                 // victim -> 0, rendezvous, left unexpected
	tagG                 // survivor -> 0, wildcard receive posted before the death
	tagS                 // survivor -> 0, numbered stream across the death
	tagX                 // 0 -> victim, never received
	tagGo                // 0 -> survivor: send the S stream
	tagGo2               // 0 -> survivor: send D, C, G
	amSent               // survivor -> 0: everything was sent
)

var floodSizes = []int{8, 200, 3000, 70000, 16, 9000}

func numbered(n, seq int) []byte {
	b := pattern(max(n, 8), byte(seq))
	binary.LittleEndian.PutUint64(b, uint64(seq))
	return b[:max(n, 8)]
}

func init() {
	// errkill: rank 1 is the victim, rank 2 a survivor.
	childRoles["errkill"] = func(nd *node) error {
		if nd.rank == 1 {
			return errVictim(nd)
		}
		return errSurvivor(nd)
	}
}

// errVictim sends its memory keys, a message with tag C and a rendezvous
// message with tag E, then floods rank 0 with numbered messages until it
// is killed.
func errVictim(nd *node) error {
	ep := nd.eps[0]
	reg := make([]byte, 1<<20)
	mr, err := nd.w.MemMap(reg)
	if err != nil {
		return err
	}
	ma, err := nd.w.MemAlloc(4096)
	if err != nil {
		return err
	}
	var keys []byte
	for _, m := range []*Mem{mr, ma} {
		k := m.PackRKey()
		keys = binary.LittleEndian.AppendUint64(keys, m.Address())
		keys = binary.LittleEndian.AppendUint16(keys, uint16(len(k)))
		keys = append(keys, k...)
	}
	first := []*Request{
		ep.TagSend(keys, mkTag(nd.rank, tagKeys), nil),
		ep.TagSend([]byte("victim C"), mkTag(nd.rank, tagC), nil),
		ep.TagSend(pattern(100000, 'E'), mkTag(nd.rank, tagE), nil),
	}
	for _, r := range first[:2] {
		if err := nd.wait(r); err != nil {
			return err
		}
	}
	var out []*Request
	for seq := 0; ; seq++ {
		out = append(out, ep.TagSend(numbered(floodSizes[seq%len(floodSizes)], seq), mkTag(nd.rank, tagFlood), nil))
		if len(out) < 32 {
			continue
		}
		if err := nd.wait(out[0]); err != nil {
			return err
		}
		out[0].Release()
		out = out[1:]
	}
}

// errSurvivor purges a failed endpoint from its error handler (Suspend
// mode), and on tagGo sends 100 numbered messages with tag S, on tagGo2
// D, C and G, then the AM amSent; then it echoes until tagQuit.
func errSurvivor(nd *node) error {
	for _, ep := range nd.eps {
		if ep != nil {
			ep.params.ErrorHandler = func(ep *Endpoint, _ error) {
				if ep.w.MatchingSuspended() {
					ep.w.Purge(ep)
				}
			}
		}
	}
	ep := nd.eps[0]
	if err := nd.wait(nd.w.TagRecv(nil, mkTag(0, tagGo), exact, nil)); err != nil {
		return err
	}
	var reqs []*Request
	for i := 0; i < 100; i++ {
		reqs = append(reqs, ep.TagSend(numbered(floodSizes[i%len(floodSizes)], i), mkTag(nd.rank, tagS), nil))
	}
	if err := nd.wait(nd.w.TagRecv(nil, mkTag(0, tagGo2), exact, nil)); err != nil {
		return err
	}
	for _, t := range []uint32{tagD, tagC, tagG} {
		reqs = append(reqs, ep.TagSend([]byte(survivorText(t)), mkTag(nd.rank, t), nil))
	}
	reqs = append(reqs, ep.AMSend(amSent, nil, nil, nil))
	for _, r := range reqs {
		if err := nd.wait(r); err != nil {
			return err
		}
	}
	return childRoles["echo"](nd)
}

func survivorText(tag uint32) string { return fmt.Sprintf("survivor %d", tag) }

// progressUntil progresses the worker until cond holds.
func (nd *node) progressUntil(what string, cond func() bool) {
	nd.t.Helper()
	ctx, cancel := testCtx()
	defer cancel()
	for !cond() {
		if nd.w.Progress() > 0 {
			continue
		}
		if ctx.Err() != nil {
			nd.t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
		c, cc := context.WithTimeout(ctx, 50*time.Millisecond)
		nd.w.Wait(c)
		cc()
	}
}

// pending checks that r has not completed and has no notice.
func pending(t *testing.T, what string, r *Request) {
	t.Helper()
	if done, err := r.Test(); done || err != nil {
		t.Fatalf("%s: done %v, err %v; want pending", what, done, err)
	}
}

// toldPending checks that r is pending and reports ErrProcFailedPending
// exactly once.
func toldPending(t *testing.T, what string, r *Request) {
	t.Helper()
	if done, err := r.Test(); done || !errors.Is(err, ErrProcFailedPending) {
		t.Fatalf("%s: done %v, err %v; want pending with ErrProcFailedPending", what, done, err)
	} else if pe := (*PendingError)(nil); !errors.As(err, &pe) || pe.Final() || Final(err) {
		t.Fatalf("%s: %v is not a non-final PendingError", what, err)
	}
	pending(t, what+" (second test)", r)
}

// recvd checks that r completed with the message text from ep.
func recvd(t *testing.T, nd *node, what string, r *Request, buf []byte, text string, from *Endpoint) {
	t.Helper()
	if !r.Done() {
		t.Fatalf("%s: still pending", what)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if in := r.Info(); in.Sender != from || string(buf[:in.Length]) != text {
		t.Fatalf("%s: got %q from %v, want %q from %v", what, buf[:in.Length], in.Sender.Name(), text, from.Name())
	}
}

func failedWith(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}

// TestErrKill SIGKILLs rank 1 while its tag traffic, rendezvous transfers
// and our RMA are in flight, checks that every request completes, that
// the error handler runs once, that matching is suspended, resumed or
// purged as configured, and that rank 2 (if any) keeps exchanging
// messages with none lost, duplicated or reordered.
func TestErrKill(t *testing.T) {
	for _, tls := range errTLS {
		for _, c := range errCases {
			for _, n := range []int{2, 3} {
				if c.cfg.RndvScheme == RndvPut && n == 2 {
					continue
				}
				t.Run(fmt.Sprintf("%s/%s/%dproc", tls, c.name, n), func(t *testing.T) {
					testErrKill(t, tls, c, n)
				})
			}
		}
	}
}

func testErrKill(t *testing.T, tls string, c errCase, n int) {
	nd := tlsWorld(t, tls, n, "errkill", c.cfg, c.env(tls)...)
	w, ep1 := nd.w, nd.eps[1]
	peer := c.cfg.ErrorMode == ErrorModePeer
	suspend := peer && c.cfg.MatchingMode == MatchingSuspend
	sent := false
	w.SetAMHandler(amSent, func(*AMMessage) { sent = true })

	keys := recvKeys(t, nd, 1)
	// The victim's first 20 flood messages arrive in order; C and E,
	// sent before them, are now unexpected.
	buf := make([]byte, 70000)
	for i := 0; i < 20; i++ {
		r := w.TagRecv(buf, mkTag(1, tagFlood), exact, nil)
		nd.must(nd.wait(r))
		if seq := binary.LittleEndian.Uint64(buf); seq != uint64(i) || r.Info().Length != max(floodSizes[i%6], 8) {
			t.Fatalf("flood message %d: seq %d, length %d", i, seq, r.Info().Length)
		}
		r.Release()
	}
	if _, ok := w.TagProbe(mkTag(1, tagE), exact); !ok {
		t.Fatal("the victim's rendezvous message is not unexpected")
	}

	// Work in flight towards the victim: rendezvous sends it never
	// receives, a flush behind them.
	var toVictim []*Request
	for i := 0; i < 4; i++ {
		toVictim = append(toVictim, ep1.TagSend(pattern(256<<10, byte(i)), mkTag(0, tagX), nil))
	}
	flush := ep1.Flush(nil)
	// receives of the victim's stream whose rendezvous may be under way
	var rF []*Request
	var bufF [][]byte
	for i := 0; i < 12; i++ {
		bufF = append(bufF, make([]byte, 70000))
		rF = append(rF, w.TagRecv(bufF[i], mkTag(1, tagFlood), exact, nil))
	}
	// Posted receives: B can only match the victim, G (wildcard) and
	// S, D (survivor only) wait for the survivor.
	bufB, bufG, bufD := make([]byte, 64), make([]byte, 64), make([]byte, 64)
	rB := w.TagRecv(bufB, mkTag(1, tagB), exact, nil)
	rG := w.TagRecv(bufG, mkTag(0, tagG), anySrc, nil)
	var rD *Request
	var rS []*Request
	var bufS [][]byte
	if n == 3 {
		rD = w.TagRecv(bufD, mkTag(2, tagD), exact, nil)
		for i := 0; i < 100; i++ {
			bufS = append(bufS, make([]byte, 70000))
			rS = append(rS, w.TagRecv(bufS[i], mkTag(2, tagS), exact, nil))
		}
		// the survivor's stream is in flight while the victim dies
		nd.must(nd.wait(nd.eps[2].TagSend(nil, mkTag(0, tagGo), nil)))
	}

	nd.kill(1)
	// RMA and sends racing with the failure's detection either succeed
	// (the process is not gone yet) or fail with the peer's failure.
	var old uint64
	racing := []*Request{
		ep1.Get(make([]byte, 1<<20), keys[0].addr, keys[0].key, nil),
		ep1.Put(pattern(1<<20, 3), keys[0].addr, keys[0].key, nil),
		ep1.AtomicFetch(AtomicAdd, 1, 0, &old, keys[1].addr, keys[1].key, nil),
		ep1.TagSend(pattern(100, 1), mkTag(0, tagX), nil),
	}
	nd.progressUntil("the victim's failure", func() bool { return ep1.Err() != nil })
	failedWith(t, "endpoint error", ep1.Err(), uct.ErrPeerFailed)
	for i, r := range racing {
		if err := nd.wait(r); err != nil {
			failedWith(t, fmt.Sprintf("racing request %d", i), err, uct.ErrPeerFailed)
		}
	}
	for i, r := range toVictim {
		// in flight: the lane's status; never sent: canceled
		if err := nd.wait(r); !errors.Is(err, uct.ErrPeerFailed) && !errors.Is(err, uct.ErrCanceled) {
			t.Fatalf("rendezvous send %d: %v", i, err)
		}
	}
	failedWith(t, "flush", nd.wait(flush), uct.ErrPeerFailed)
	// new operations fail at once with the endpoint's status
	for i, r := range []*Request{
		ep1.TagSend(nil, mkTag(0, tagX), nil),
		ep1.TagSend(pattern(1<<20, 0), mkTag(0, tagX), nil),
		ep1.Get(make([]byte, 8), keys[0].addr, keys[0].key, nil),
		ep1.Put(make([]byte, 8), keys[0].addr, keys[0].key, nil),
		ep1.AtomicPost(AtomicAdd, 1, keys[1].addr, keys[1].key, nil),
		ep1.AMSend(amPing, nil, nil, nil),
		ep1.Flush(nil),
	} {
		if !r.Done() {
			t.Fatalf("operation %d on the failed endpoint did not fail at once", i)
		}
		failedWith(t, fmt.Sprintf("operation %d on the failed endpoint", i), r.Err(), uct.ErrPeerFailed)
	}

	// the error handler runs once, for the victim only
	w.Progress()
	w.Progress()
	if peer {
		if len(nd.errs) != 1 {
			t.Fatalf("%d error handler calls, want 1", len(nd.errs))
		}
		e := <-nd.errs
		if e.rank != 1 || !errors.Is(e.err, uct.ErrPeerFailed) {
			t.Fatalf("error handler: rank %d, %v", e.rank, e.err)
		}
	} else if len(nd.errs) != 0 {
		t.Fatalf("error handler called in error mode none: %v", (<-nd.errs).err)
	}
	if n == 3 && nd.eps[2].Err() != nil {
		t.Fatalf("survivor's endpoint failed: %v", nd.eps[2].Err())
	}

	// matching state right after the failure
	if w.MatchingSuspended() != suspend {
		t.Fatalf("matching suspended: %v, want %v", w.MatchingSuspended(), suspend)
	}
	switch {
	case suspend:
		toldPending(t, "receive from the victim", rB)
		toldPending(t, "wildcard receive", rG)
		if n == 3 {
			pending(t, "receive from the survivor", rD)
		}
		if _, ok := w.TagProbe(0, 0); ok {
			t.Fatal("probe found a message while matching is suspended")
		}
	case peer: // never suspend: the receive that can only match the victim fails
		failedWith(t, "receive from the victim", nd.wait(rB), uct.ErrPeerFailed)
	default:
		pending(t, "receive from the victim", rB)
	}
	if !suspend && n == 2 {
		pending(t, "wildcard receive", rG)
	}
	// a wildcard receive posted now for C: the victim's C is unexpected
	bufC := make([]byte, 64)
	rC := w.TagRecv(bufC, mkTag(0, tagC), anySrc, nil)
	if suspend {
		toldPending(t, "wildcard receive posted after the failure", rC)
	} else {
		// messages that arrived before the failure stay matchable
		recvd(t, nd, "wildcard receive for C", rC, bufC, "victim C", ep1)
	}
	// a receive that can only match the victim, posted now, fails at
	// once, also while matching is suspended
	rB2 := w.TagRecv(bufB, mkTag(1, tagB), exact, nil)
	switch {
	case peer:
		failedWith(t, "second receive from the victim", nd.wait(rB2), uct.ErrPeerFailed)
	default:
		pending(t, "second receive from the victim", rB2)
	}

	if n == 3 {
		nd.must(nd.wait(nd.eps[2].TagSend(nil, mkTag(0, tagGo2), nil)))
		nd.progressUntil("the survivor's messages", func() bool { return sent })
		if suspend {
			pending(t, "receive from the survivor while suspended", rD)
			pending(t, "wildcard receive while suspended", rG)
			if _, ok := w.TagProbe(0, 0); ok {
				t.Fatal("probe found a message while matching is suspended")
			}
		}
	}

	switch c.resolve {
	case "resume":
		w.ResumeMatching()
		if w.MatchingSuspended() {
			t.Fatal("still suspended after ResumeMatching")
		}
		// the victim's C arrived first; receives that can only match the
		// victim stay posted until Purge
		recvd(t, nd, "wildcard receive for C after resume", rC, bufC, "victim C", ep1)
		pending(t, "receive from the victim after resume", rB)
		// the victim's rendezvous message is still there, but its data
		// cannot be fetched
		rE := w.TagRecv(make([]byte, 100000), mkTag(1, tagE), exact, nil)
		failedWith(t, "rendezvous receive from the victim", nd.wait(rE), uct.ErrPeerFailed)
		w.Purge(ep1)
		failedWith(t, "receive from the victim after purge", nd.wait(rB), uct.ErrPeerFailed)
		failedWith(t, "second receive from the victim after purge", nd.wait(rB2), uct.ErrPeerFailed)
	case "purge":
		w.Purge(ep1)
		if w.MatchingSuspended() {
			t.Fatal("still suspended after Purge")
		}
		failedWith(t, "receive from the victim after purge", nd.wait(rB), uct.ErrPeerFailed)
		failedWith(t, "second receive from the victim after purge", nd.wait(rB2), uct.ErrPeerFailed)
		if n == 3 {
			recvd(t, nd, "wildcard receive for C after purge", rC, bufC, survivorText(tagC), nd.eps[2])
		} else {
			pending(t, "wildcard receive for C after purge", rC)
		}
	default:
		w.Purge(ep1)
		if !peer {
			// nothing told the receives that can only match the victim
			failedWith(t, "receive from the victim after purge", nd.wait(rB), uct.ErrPeerFailed)
			failedWith(t, "second receive from the victim after purge", nd.wait(rB2), uct.ErrPeerFailed)
		}
	}
	// The victim's stream: every receive completed, the delivered
	// messages in their places, the others with the victim's failure.
	for i, r := range rF {
		seq := 20 + i
		if err := nd.wait(r); err != nil {
			failedWith(t, fmt.Sprintf("receive %d of the victim's stream", seq), err, uct.ErrPeerFailed)
			continue
		}
		if binary.LittleEndian.Uint64(bufF[i]) != uint64(seq) || r.Info().Length != max(floodSizes[seq%6], 8) {
			t.Fatalf("receive %d of the victim's stream: seq %d, length %d", seq, binary.LittleEndian.Uint64(bufF[i]), r.Info().Length)
		}
	}
	// The victim's unexpected messages are gone: only the survivor's C
	// can be left, unless the wildcard receive took it.
	left := 0
	for {
		m, ok := w.TagProbeRemove(0, 0)
		if !ok {
			break
		}
		if m.Info.Sender != nd.eps[2] || m.Info.Tag != mkTag(2, tagC) {
			t.Fatalf("unexpected message left from %s, tag %x", m.Info.Sender.Name(), m.Info.Tag)
		}
		left++
		nd.must(nd.wait(w.TagRecvMessage(make([]byte, m.Info.Length), m, nil)))
	}
	if want := map[bool]int{true: 1}[n == 3 && c.resolve != "purge"]; left != want {
		t.Fatalf("%d unexpected messages left, want %d", left, want)
	}
	if _, unexp := w.m.Len(); unexp != 0 {
		t.Fatalf("%d unexpected messages after purge", unexp)
	}

	if n == 2 {
		if !rC.Done() {
			rC.Cancel()
		}
		rG.Cancel()
		return
	}
	// Survivor: every message arrived once, in order.
	nd.must(nd.wait(rD))
	recvd(t, nd, "receive from the survivor", rD, bufD, survivorText(tagD), nd.eps[2])
	nd.must(nd.wait(rG))
	recvd(t, nd, "wildcard receive for G", rG, bufG, survivorText(tagG), nd.eps[2])
	for i, r := range rS {
		nd.must(nd.wait(r))
		ln := max(floodSizes[i%6], 8)
		if r.Info().Length != ln || !bytes.Equal(bufS[i][:ln], numbered(ln, i)) {
			t.Fatalf("survivor message %d: length %d seq %d", i, r.Info().Length, binary.LittleEndian.Uint64(bufS[i]))
		}
	}
	errEcho(t, nd, 2, 100)
	nd.quit(2)
	nd.exitOK(2)
}

// errEcho sends count numbered messages to rank r's echo loop, all in
// flight at once, and checks that they come back once each, in order.
func errEcho(t *testing.T, nd *node, r, count int) {
	t.Helper()
	ep := nd.eps[r]
	var recvs, sends []*Request
	var bufs [][]byte
	for i := 0; i < count; i++ {
		bufs = append(bufs, make([]byte, 70000))
		recvs = append(recvs, nd.w.TagRecv(bufs[i], mkTag(r, tagData), exact, nil))
	}
	for i := 0; i < count; i++ {
		sends = append(sends, ep.TagSend(numbered(floodSizes[i%6], i), mkTag(0, tagData), nil))
	}
	for i := range sends {
		nd.must(nd.wait(sends[i]))
		nd.must(nd.wait(recvs[i]))
		ln := max(floodSizes[i%6], 8)
		if recvs[i].Info().Length != ln || !bytes.Equal(bufs[i][:ln], numbered(ln, i)) {
			t.Fatalf("echo %d: length %d seq %d", i, recvs[i].Info().Length, binary.LittleEndian.Uint64(bufs[i]))
		}
	}
}

// survivorStream posts receives for the survivor's (rank 2) messages
// after tagGo and checks them: 100 numbered messages with tag S in
// order, then D and C; rG, a wildcard receive for G, must get its G.
func survivorStream(t *testing.T, nd *node, rG *Request, bufG []byte) {
	t.Helper()
	w := nd.w
	var rS []*Request
	var bufS [][]byte
	for i := 0; i < 100; i++ {
		bufS = append(bufS, make([]byte, 70000))
		rS = append(rS, w.TagRecv(bufS[i], mkTag(2, tagS), exact, nil))
	}
	bufD, bufC := make([]byte, 64), make([]byte, 64)
	rD := w.TagRecv(bufD, mkTag(2, tagD), exact, nil)
	rC := w.TagRecv(bufC, mkTag(2, tagC), exact, nil)
	nd.must(nd.wait(nd.eps[2].TagSend(nil, mkTag(0, tagGo), nil)))
	nd.must(nd.wait(nd.eps[2].TagSend(nil, mkTag(0, tagGo2), nil)))
	for i, r := range rS {
		nd.must(nd.wait(r))
		ln := max(floodSizes[i%6], 8)
		if r.Info().Length != ln || !bytes.Equal(bufS[i][:ln], numbered(ln, i)) {
			t.Fatalf("survivor message %d: length %d seq %d", i, r.Info().Length, binary.LittleEndian.Uint64(bufS[i]))
		}
	}
	for _, x := range []struct {
		r   *Request
		buf []byte
		tag uint32
	}{{rD, bufD, tagD}, {rC, bufC, tagC}, {rG, bufG, tagG}} {
		nd.must(nd.wait(x.r))
		recvd(t, nd, survivorText(x.tag), x.r, x.buf, survivorText(x.tag), nd.eps[2])
	}
}

// TestErrCloseInHandler closes the failed endpoint from its own error
// handler (force and flush, plain and thread-safe workers) while
// rendezvous sends are in flight, and checks that the handler runs once,
// every request completes, Purge still works on the closed endpoint and
// the survivor is unaffected.
func TestErrCloseInHandler(t *testing.T) {
	for _, tls := range errTLS {
		for _, x := range []struct {
			mm   MatchingMode
			mode CloseMode
			safe bool
			n    int
		}{
			{MatchingSuspend, CloseForce, false, 2},
			{MatchingSuspend, CloseFlush, true, 3},
			{MatchingNeverSuspend, CloseForce, true, 2},
			{MatchingNeverSuspend, CloseFlush, false, 3},
		} {
			mname := map[MatchingMode]string{MatchingSuspend: "suspend", MatchingNeverSuspend: "never"}[x.mm]
			cname := map[CloseMode]string{CloseForce: "force", CloseFlush: "flush"}[x.mode]
			t.Run(fmt.Sprintf("%s/%s/%s/safe=%v/%dproc", tls, mname, cname, x.safe, x.n), func(t *testing.T) {
				c := errCase{cfg: Config{ErrorMode: ErrorModePeer, MatchingMode: x.mm, ThreadSafe: x.safe}}
				testErrCloseInHandler(t, tls, c, x.mode, x.n)
			})
		}
	}
}

func testErrCloseInHandler(t *testing.T, tls string, c errCase, mode CloseMode, n int) {
	nd := tlsWorld(t, tls, n, "errkill", c.cfg, c.env(tls)...)
	w, ep1 := nd.w, nd.eps[1]
	suspend := c.cfg.MatchingMode == MatchingSuspend
	recvKeys(t, nd, 1)
	buf := make([]byte, 70000)
	for i := 0; i < 5; i++ {
		nd.must(nd.wait(w.TagRecv(buf, mkTag(1, tagFlood), exact, nil)))
	}
	calls := 0
	var closeReq *Request
	var handlerErr error
	ep1.params.ErrorHandler = func(ep *Endpoint, err error) {
		calls++
		handlerErr = err
		closeReq = ep.Close(mode)
	}
	var sends []*Request
	for i := 0; i < 4; i++ {
		sends = append(sends, ep1.TagSend(pattern(256<<10, byte(i)), mkTag(0, tagX), nil))
	}
	bufG := make([]byte, 64)
	rG := w.TagRecv(bufG, mkTag(0, tagG), anySrc, nil)
	rB := w.TagRecv(make([]byte, 64), mkTag(1, tagB), exact, nil)

	nd.kill(1)
	nd.progressUntil("the error handler", func() bool { return calls > 0 })
	failedWith(t, "handler's error", handlerErr, uct.ErrPeerFailed)
	if closeReq == nil || !closeReq.Done() || closeReq.Err() != nil {
		t.Fatalf("close inside the handler: %v", closeReq)
	}
	for i, r := range sends {
		if err := nd.wait(r); !errors.Is(err, uct.ErrPeerFailed) && !errors.Is(err, uct.ErrCanceled) {
			t.Fatalf("rendezvous send %d: %v", i, err)
		}
	}
	if r := ep1.TagSend(nil, mkTag(0, tagX), nil); !r.Done() || !errors.Is(r.Err(), uct.ErrPeerFailed) {
		t.Fatalf("send on the closed endpoint: done %v, %v", r.Done(), r.Err())
	}
	if suspend {
		toldPending(t, "wildcard receive", rG)
		toldPending(t, "receive from the victim", rB)
		w.Purge(ep1) // purging a closed endpoint still cleans up matching
		if w.MatchingSuspended() {
			t.Fatal("suspended after purge")
		}
	}
	failedWith(t, "receive from the victim", nd.wait(rB), uct.ErrPeerFailed)
	for i := 0; i < 3; i++ {
		w.Progress()
	}
	if calls != 1 {
		t.Fatalf("error handler ran %d times", calls)
	}
	if n == 2 {
		pending(t, "wildcard receive", rG)
		rG.Cancel()
		return
	}
	survivorStream(t, nd, rG, bufG)
	errEcho(t, nd, 2, 50)
	nd.quit(2)
	nd.exitOK(2)
}

// TestErrForceClose force-closes an endpoint to a live (stopped) peer
// with sends queued by back-pressure, rendezvous sends, RMA and a flush
// in flight: every request completes, canceled, no error handler runs,
// and new operations (flush included) fail with uct.ErrClosed.
func TestErrForceClose(t *testing.T) {
	for _, tls := range errTLS {
		for _, x := range []struct {
			em    ErrorMode
			purge bool
		}{{ErrorModePeer, false}, {ErrorModeNone, false}, {ErrorModePeer, true}} {
			em := x.em
			t.Run(fmt.Sprintf("%s/%s/purge=%v", tls, em, x.purge), func(t *testing.T) {
				// keepalive off: the stopped peer must not be declared failed
				c := errCase{cfg: Config{ErrorMode: em, KeepaliveInterval: -1}}
				nd := tlsWorld(t, tls, 2, "rma", c.cfg, c.env(tls)...)
				ep := nd.eps[1]
				keys := recvKeys(t, nd, 1)
				nd.stopChild(1)
				var reqs []*Request
				for i := 0; i < 4; i++ {
					reqs = append(reqs, ep.TagSend(pattern(100000, byte(i)), mkTag(0, tagX), nil))
				}
				// fill the peer's FIFO until a send is queued
				for i := 0; ; i++ {
					r := ep.TagSend(pattern(1000, byte(i)), mkTag(0, tagX), nil)
					reqs = append(reqs, r)
					if !r.Done() {
						break
					}
					if i > 1<<16 {
						t.Fatal("no back-pressure from a stopped peer")
					}
				}
				queued := len(reqs) - 1
				var old uint64
				reqs = append(reqs,
					ep.TagSend(pattern(100, 1), mkTag(0, tagX), nil),
					ep.Get(make([]byte, 4096), keys[0].addr, keys[0].key, nil),
					ep.Put(make([]byte, 4096), keys[0].addr, keys[0].key, nil),
					ep.AtomicFetch(AtomicAdd, 1, 0, &old, keys[1].addr, keys[1].key, nil),
					ep.AMSend(amPing, nil, []byte("x"), nil),
					ep.Flush(nil))
				for i, r := range reqs[:4] {
					if r.Done() {
						t.Fatalf("rendezvous send %d completed: %v", i, r.Err())
					}
				}
				rB := nd.w.TagRecv(make([]byte, 8), mkTag(1, tagB), exact, nil)
				rW := nd.w.TagRecv(make([]byte, 8), mkTag(0, tagB), anySrc, nil)
				if x.purge {
					// Purge of a healthy endpoint: shut down like a
					// force close, receives that can only match it
					// canceled, wildcards stay
					nd.w.Purge(ep)
					failedWith(t, "receive from the purged peer", rB.Err(), uct.ErrCanceled)
					pending(t, "wildcard receive", rW)
				} else {
					cl := ep.Close(CloseForce)
					if !cl.Done() || cl.Err() != nil {
						t.Fatalf("force close: done %v, %v", cl.Done(), cl.Err())
					}
					pending(t, "receive from the closed peer", rB)
					rB.Cancel()
				}
				rW.Cancel()
				for i, r := range reqs {
					if !r.Done() {
						t.Fatalf("request %d not completed by force close", i)
					}
					if i < 4 || i >= queued {
						failedWith(t, fmt.Sprintf("request %d", i), r.Err(), uct.ErrCanceled)
					}
				}
				r := ep.TagSend(nil, mkTag(0, tagX), nil)
				failedWith(t, "send after close", nd.wait(r), uct.ErrClosed)
				failedWith(t, "flush after close", nd.wait(ep.Flush(nil)), uct.ErrClosed)
				nd.w.Progress()
				if len(nd.errs) != 0 {
					t.Fatalf("error handler ran after a force close: %v", (<-nd.errs).err)
				}
			})
		}
	}
}

// TestErrWorkerClose closes a worker whose matching is suspended:
// posted receives complete canceled, unexpected messages are freed.
func TestErrWorkerClose(t *testing.T) {
	for _, tls := range errTLS {
		t.Run(tls, func(t *testing.T) {
			c := errCase{cfg: Config{ErrorMode: ErrorModePeer}}
			nd := tlsWorld(t, tls, 2, "errkill", c.cfg, c.env(tls)...)
			recvKeys(t, nd, 1)
			nd.must(nd.wait(nd.w.TagRecv(make([]byte, 70000), mkTag(1, tagFlood), exact, nil)))
			rW := nd.w.TagRecv(make([]byte, 8), mkTag(0, tagG), anySrc, nil)
			rB := nd.w.TagRecv(make([]byte, 8), mkTag(1, tagB), exact, nil)
			nd.kill(1)
			nd.progressUntil("suspension", nd.w.MatchingSuspended)
			nd.must(nd.w.Close())
			for _, r := range []*Request{rW, rB} {
				if !r.Done() {
					t.Fatal("posted receive not completed by Worker.Close")
				}
				failedWith(t, "posted receive", r.Err(), uct.ErrCanceled)
			}
			if p, u := nd.w.m.Len(); p != 0 || u != 0 {
				t.Fatalf("after close: %d posted, %d unexpected", p, u)
			}
		})
	}
}

const (
	syscallSIGCONT = syscall.SIGCONT
)

func init() {
	// kaecho: purge failed endpoints from the error handler, echo until
	// tagQuit.
	childRoles["kaecho"] = func(nd *node) error {
		for _, ep := range nd.eps {
			if ep != nil {
				ep.params.ErrorHandler = func(ep *Endpoint, _ error) { ep.w.Purge(ep) }
			}
		}
		return childRoles["echo"](nd)
	}
}

// armed reports whether silence detection of ep is armed (a heartbeat
// from its peer arrived).
func armed(ep *Endpoint) bool {
	ep.w.lock()
	defer ep.w.unlock()
	return ep.kaPeer != 0
}

// missed returns the keepalive rounds in a row without a heartbeat from
// ep's peer.
func missed(ep *Endpoint) int {
	ep.w.lock()
	defer ep.w.unlock()
	return ep.kaMissed
}

// TestErrKeepaliveStopped stops rank 1 with SIGSTOP: pidfd sees a live
// process and shm's liveness check passes, but the peer is silent, so
// keepalive with DetectSilentPeers fails its endpoint with
// uct.ErrEndpointTimeout; rank 2 keeps exchanging messages.
func TestErrKeepaliveStopped(t *testing.T) {
	for _, tls := range errTLS {
		t.Run(tls, func(t *testing.T) {
			// Rank 1, to be stopped, and we beat every 100 ms; rank 2
			// every 2 s, so that we give it 6 s (three of its intervals)
			// and it gives us as much: a loaded machine does not make a
			// healthy peer look silent.
			const ival = 100 * time.Millisecond
			c := errCase{cfg: Config{ErrorMode: ErrorModePeer, KeepaliveInterval: ival, DetectSilentPeers: true}}
			nd := tlsWorld(t, tls, 3, "kaecho", c.cfg, append(c.env(tls), EnvKeepalive+"=2s",
				rankEnvPrefix+"1="+EnvKeepalive+"="+ival.String())...)
			ep1, ep2 := nd.eps[1], nd.eps[2]
			nd.progressUntil("a heartbeat from rank 1", func() bool { return armed(ep1) })
			rB := nd.w.TagRecv(make([]byte, 8), mkTag(1, tagB), exact, nil)
			nd.must(nd.procs[1].Process.Signal(syscall.SIGSTOP))
			nd.progressUntil("the stopped peer's failure", func() bool { return ep1.Err() != nil })
			failedWith(t, "stopped peer", ep1.Err(), uct.ErrEndpointTimeout)
			nd.w.Progress()
			if len(nd.errs) != 1 {
				t.Fatalf("%d error handler calls", len(nd.errs))
			}
			if e := <-nd.errs; e.rank != 1 || !errors.Is(e.err, uct.ErrEndpointTimeout) {
				t.Fatalf("error handler: rank %d, %v", e.rank, e.err)
			}
			toldPending(t, "receive from the stopped peer", rB)
			nd.w.Purge(ep1)
			failedWith(t, "receive from the stopped peer", nd.wait(rB), uct.ErrEndpointTimeout)
			if ep2.Err() != nil {
				t.Fatalf("healthy peer failed: %v", ep2.Err())
			}
			errEcho(t, nd, 2, 50)
			nd.quit(2)
			nd.exitOK(2)
		})
	}
}

// TestErrKeepaliveSilentOff: without DetectSilentPeers a stopped peer
// (as a peer in a long compute phase without Progress) misses many more
// heartbeat rounds than would fail it, stays healthy, and once continued
// exchanges messages as before.
func TestErrKeepaliveSilentOff(t *testing.T) {
	for _, tls := range errTLS {
		t.Run(tls, func(t *testing.T) {
			const ival = 50 * time.Millisecond
			c := errCase{cfg: Config{ErrorMode: ErrorModePeer, KeepaliveInterval: ival}}
			nd := tlsWorld(t, tls, 2, "kaecho", c.cfg, append(c.env(tls), EnvKeepalive+"="+ival.String())...)
			ep1 := nd.eps[1]
			nd.progressUntil("a heartbeat from rank 1", func() bool { return armed(ep1) })
			nd.must(nd.procs[1].Process.Signal(syscall.SIGSTOP))
			nd.progressUntil("4x the rounds that fail a silent peer", func() bool {
				return missed(ep1) >= 4*keepaliveMisses || ep1.Err() != nil
			})
			if err := ep1.Err(); err != nil {
				t.Fatalf("stopped peer failed without DetectSilentPeers: %v", err)
			}
			nd.must(nd.procs[1].Process.Signal(syscall.SIGCONT))
			errEcho(t, nd, 1, 20)
			if len(nd.errs) != 0 {
				t.Fatalf("%d error handler calls", len(nd.errs))
			}
			nd.quit(1)
			nd.exitOK(1)
		})
	}
}

// TestErrKeepaliveKilled ignores the transport's failure reports, so only
// keepalive can notice that the SIGKILLed peer is gone.
func TestErrKeepaliveKilled(t *testing.T) {
	for _, tls := range errTLS {
		t.Run(tls, func(t *testing.T) {
			c := errCase{cfg: Config{ErrorMode: ErrorModePeer, KeepaliveInterval: 50 * time.Millisecond}}
			nd := tlsWorld(t, tls, 2, "echo", c.cfg, c.env(tls)...)
			ep := nd.eps[1]
			r := nd.w.TagRecv(make([]byte, 8), mkTag(1, tagB), exact, nil)
			nd.w.ignoreIfaceErrors.Store(true)
			nd.kill(1)
			nd.progressUntil("keepalive", func() bool { return ep.Err() != nil })
			failedWith(t, "killed peer", ep.Err(), uct.ErrPeerFailed)
			toldPending(t, "receive from the killed peer", r)
			nd.w.Purge(ep)
			failedWith(t, "receive from the killed peer", nd.wait(r), uct.ErrPeerFailed)
		})
	}
}

// TestErrNoSourceMask: without a source-tag mask the worker cannot tell
// which receives can only match the failed peer, so every receive counts
// as a wildcard: all are told (Suspend), none is failed for the peer
// (Purge, NeverSuspend); the peer's unexpected messages are still purged.
func TestErrNoSourceMask(t *testing.T) {
	for _, tls := range errTLS {
		for _, mm := range []MatchingMode{MatchingSuspend, MatchingNeverSuspend} {
			t.Run(fmt.Sprintf("%s/never=%v", tls, mm == MatchingNeverSuspend), func(t *testing.T) {
				c := errCase{cfg: Config{ErrorMode: ErrorModePeer, MatchingMode: mm, SourceTagMask: noSrcMask}}
				nd := tlsWorld(t, tls, 2, "errkill", c.cfg, c.env(tls)...)
				w, ep1 := nd.w, nd.eps[1]
				recvKeys(t, nd, 1)
				nd.must(nd.wait(w.TagRecv(make([]byte, 70000), mkTag(1, tagFlood), exact, nil)))
				rB := w.TagRecv(make([]byte, 8), mkTag(1, tagB), exact, nil)
				rW := w.TagRecv(make([]byte, 8), mkTag(0, tagB), anySrc, nil)
				nd.kill(1)
				nd.progressUntil("the failure", func() bool { return ep1.Err() != nil })
				if mm == MatchingSuspend {
					toldPending(t, "receive with the victim's tag", rB)
					toldPending(t, "wildcard receive", rW)
				}
				w.Purge(ep1)
				pending(t, "receive with the victim's tag after purge", rB)
				pending(t, "wildcard receive after purge", rW)
				if _, unexp := w.m.Len(); unexp != 0 {
					t.Fatalf("%d unexpected messages after purge", unexp)
				}
				rB.Cancel()
				rW.Cancel()
			})
		}
	}
}

// TestErrTwoFailures: a wildcard receive is told of each failed peer
// once; matching stays suspended until every failure is purged (or one
// ResumeMatching acknowledges both).
func TestErrTwoFailures(t *testing.T) {
	for _, tls := range errTLS {
		for _, resolve := range []string{"purge", "resume"} {
			t.Run(tls+"/"+resolve, func(t *testing.T) {
				c := errCase{cfg: Config{ErrorMode: ErrorModePeer}}
				nd := tlsWorld(t, tls, 3, "errkill", c.cfg, c.env(tls)...)
				w, ep1, ep2 := nd.w, nd.eps[1], nd.eps[2]
				recvKeys(t, nd, 1)
				rW := w.TagRecv(make([]byte, 8), mkTag(0, tagB), anySrc, nil)
				r1 := w.TagRecv(make([]byte, 8), mkTag(1, tagB), exact, nil)
				r2 := w.TagRecv(make([]byte, 8), mkTag(2, tagB), exact, nil)
				nd.kill(1)
				nd.progressUntil("the first failure", func() bool { return ep1.Err() != nil })
				toldPending(t, "wildcard receive, first failure", rW)
				toldPending(t, "receive from rank 1", r1)
				pending(t, "receive from rank 2", r2)
				nd.kill(2)
				nd.progressUntil("the second failure", func() bool { return ep2.Err() != nil })
				toldPending(t, "wildcard receive, second failure", rW)
				pending(t, "receive from rank 1, second failure", r1)
				toldPending(t, "receive from rank 2", r2)
				if resolve == "resume" {
					w.ResumeMatching()
					if w.MatchingSuspended() {
						t.Fatal("suspended after ResumeMatching")
					}
					pending(t, "wildcard receive after resume", rW)
				}
				w.Purge(ep1)
				failedWith(t, "receive from rank 1 after purge", nd.wait(r1), uct.ErrPeerFailed)
				if resolve == "purge" {
					if !w.MatchingSuspended() {
						t.Fatal("matching resumed with a failure still pending")
					}
					pending(t, "receive from rank 2 after the first purge", r2)
				}
				w.Purge(ep2)
				if w.MatchingSuspended() {
					t.Fatal("suspended after both purges")
				}
				failedWith(t, "receive from rank 2 after purge", nd.wait(r2), uct.ErrPeerFailed)
				pending(t, "wildcard receive after both purges", rW)
				rW.Cancel()
				nd.w.Progress()
				if len(nd.errs) != 2 {
					t.Fatalf("%d error handler calls, want 2", len(nd.errs))
				}
			})
		}
	}
}

// TestErrCutOffKilled (rc) cuts rank 1 off the network, then SIGKILLs
// it, with rendezvous sends, a GET and receives in flight: no connection
// manager link can report the death, so the rc transport must find the
// peer gone by itself (work requests exceed their retries, or the
// keepalive's zero-length write does, or the connection manager link's
// TCP keepalive times out). The endpoint fails with that path status,
// matching is suspended and purged as for any failure, and rank 2 keeps
// exchanging messages. It takes the seconds rc needs to give up on a
// path (about a quarter of the 30 s endpoint timeout).
func TestErrCutOffKilled(t *testing.T) {
	c := errCase{cfg: Config{ErrorMode: ErrorModePeer}}
	nd := tlsWorld(t, "rc", 3, "errkill", c.cfg, c.env("rc")...)
	w, ep1 := nd.w, nd.eps[1]
	keys := recvKeys(t, nd, 1)
	buf := make([]byte, 70000)
	for i := 0; i < 5; i++ {
		nd.must(nd.wait(w.TagRecv(buf, mkTag(1, tagFlood), exact, nil)))
	}
	var inflight []*Request
	for i := 0; i < 4; i++ {
		inflight = append(inflight, ep1.TagSend(pattern(256<<10, byte(i)), mkTag(0, tagX), nil))
	}
	bufG := make([]byte, 64)
	rG := w.TagRecv(bufG, mkTag(0, tagG), anySrc, nil)
	rB := w.TagRecv(make([]byte, 64), mkTag(1, tagB), exact, nil)

	nd.must(nd.star.NS[1].SetLink(false))
	nd.kill(1)
	inflight = append(inflight, ep1.Get(make([]byte, 1<<20), keys[0].addr, keys[0].key, nil))
	nd.progressUntil("the cut-off peer's failure", func() bool { return ep1.Err() != nil })
	err := ep1.Err()
	t.Logf("the cut-off peer's endpoint failed: %v", err)
	if !errors.Is(err, uct.ErrEndpointTimeout) && !errors.Is(err, uct.ErrConnectionReset) {
		t.Fatalf("endpoint error %v, want a path timeout (uct.ErrEndpointTimeout or uct.ErrConnectionReset)", err)
	}
	if !uct.StatusOf(err).IsEndpointFatal() {
		t.Fatalf("endpoint error %v is not endpoint-fatal", err)
	}
	for i, r := range inflight {
		if err := nd.wait(r); err == nil || !uct.StatusOf(err).IsEndpointFatal() && !errors.Is(err, uct.ErrCanceled) {
			t.Fatalf("request %d in flight: %v, want the endpoint's failure or canceled", i, err)
		}
	}
	w.Progress()
	if len(nd.errs) != 1 {
		t.Fatalf("%d error handler calls, want 1", len(nd.errs))
	}
	if e := <-nd.errs; e.rank != 1 || !errors.Is(e.err, uct.StatusOf(err)) {
		t.Fatalf("error handler: rank %d, %v; want rank 1, %v", e.rank, e.err, err)
	}
	if !w.MatchingSuspended() {
		t.Fatal("matching not suspended")
	}
	toldPending(t, "wildcard receive", rG)
	toldPending(t, "receive from the cut-off peer", rB)
	w.Purge(ep1)
	failedWith(t, "receive from the cut-off peer after purge", nd.wait(rB), uct.StatusOf(err))
	if nd.eps[2].Err() != nil {
		t.Fatalf("survivor's endpoint failed: %v", nd.eps[2].Err())
	}
	survivorStream(t, nd, rG, bufG)
	errEcho(t, nd, 2, 50)
	nd.quit(2)
	nd.exitOK(2)
}
