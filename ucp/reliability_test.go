package ucp

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/internal/reliability"
	"github.com/ucgo/ucgo/internal/testproc"
)

// The reliability suite: go test -run Reliability ./ucp/. Each scenario
// builds network namespaces joined by veth rails (internal/netns), runs
// a receiver (the test binary re-executed) in one and a traffic
// generator in the other, injects its fault (link down, eBPF loss,
// corruption or black hole, a flap, a disabled shm device, a SIGKILL)
// while sequence-numbered tag eager and rendezvous messages, active
// messages (eager and rendezvous), puts, gets and fetching atomics are in
// flight, and checks every one: the receiver reports what arrived, in
// what order, how often and whether intact; the generator how every
// request completed. One table row per scenario; a scenario fails when a
// request does not complete exactly once, when anything is duplicated or
// corrupted, and, where a path to the peer remains, when anything is
// lost, reordered or failed.
//
// UCGO_RELIABILITY_FAILOVER (off, same, any; default any) chooses the
// failover mode of both sides.

const (
	relTagData  = 500
	relAMID     = 500
	relMaxOps   = 1 << 18 // bound on the operations of one scenario
	relWindow   = 32      // requests outstanding at a time
	relRndvLen  = 64 << 10
	relAMRndv   = 24 << 10
	relRecvs    = 64 // receives the receiver keeps posted
	relFailEnv  = "UCGO_RELIABILITY_FAILOVER"
	relGraceMax = 5 * time.Second
	// relNoWatchEnv=1: both sides remove their device watchers, so that
	// only the probes can see a link go down (TestProbeLinkDown).
	relNoWatchEnv = "UCGO_REL_NO_LINKWATCH"
)

// relKinds is the generator's rotation of operations.
var relKinds = []reliability.Kind{
	reliability.TagEager, reliability.AM, reliability.Put, reliability.TagRndv,
	reliability.TagEager, reliability.Get, reliability.Atomic, reliability.AMRndv,
}

// relReport is what the receiver reports when told to end.
type relReport struct {
	Tag, AM, Put                      []uint64 // bitmaps of delivered numbers
	TagDups, TagReord, TagCorrupt     int
	AMDups, AMReord, AMCorrupt        int
	Counter                           uint64 // the atomic counter's final value
	RecvErrs                          int    // receives completed with an error
	FailedOver, FailedBack, RouteLost uint64
}

func init() {
	// reliability: expose a region for puts, gets and atomics, print its
	// address and key, then receive and check tag and active messages
	// until stdin says "end"; print the report as one JSON line.
	childRoles["reliability"] = func(nd *node) error {
		if os.Getenv(relNoWatchEnv) == "1" {
			nd.w.unwatchLinks()
		}
		var evs []failover.Event // printed when the run ends abnormally
		nd.w.SetFailoverHandler(func(ev failover.Event) { evs = append(evs, ev) })
		region, err := nd.w.MemAlloc(relMaxOps*8 + 8)
		if err != nil {
			return err
		}
		defer region.Close()
		fmt.Printf("keys %d %s\n", region.Address(), hex.EncodeToString(region.PackRKey()))
		var end atomic.Bool
		go func() {
			line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
			_ = line // "end", or EOF when the parent is gone
			end.Store(true)
		}()
		tagT, amT := reliability.NewTally(relMaxOps), reliability.NewTally(relMaxOps)
		rep := relReport{}
		last := time.Now()
		// Receives complete in matching order only for eager data, so
		// each records its posting index and the tally is built in that
		// order at the end.
		type got struct {
			seq uint64
			ok  bool
		}
		byIdx := map[int]got{}
		idx := 0
		var post func()
		post = func() {
			buf := make([]byte, relRndvLen)
			k := idx
			idx++
			nd.w.TagRecv(buf, mkTag(0, relTagData), exact, &Params{Callback: func(r *Request) {
				last = time.Now()
				if r.Err() != nil {
					rep.RecvErrs++
					return
				}
				seq, err := reliability.Check(buf[:r.Info().Length])
				byIdx[k] = got{seq, err == nil}
				post()
			}}).Release()
		}
		for i := 0; i < relRecvs; i++ {
			post()
		}
		nd.w.SetAMHandler(relAMID, func(m *AMMessage) {
			last = time.Now()
			if len(m.Header) != 8 {
				rep.AMCorrupt++
				return
			}
			seq := binary.LittleEndian.Uint64(m.Header)
			amT.Add(seq)
			if !m.Rndv {
				if s, err := reliability.Check(m.Data); err != nil || s != seq {
					rep.AMCorrupt++
				}
				return
			}
			buf := make([]byte, m.Length)
			m.RecvData(buf, &Params{Callback: func(r *Request) {
				last = time.Now()
				if r.Err() != nil {
					return
				}
				if s, err := reliability.Check(buf); err != nil || s != seq {
					rep.AMCorrupt++
				}
			}}).Release()
		})
		for !end.Load() {
			nd.w.Progress()
		}
		// What was sent before the end may still be arriving.
		for stop := time.Now().Add(relGraceMax); time.Now().Before(stop) && time.Since(last) < 300*time.Millisecond; {
			nd.w.Progress()
		}
		for k := 0; k < idx; k++ {
			if g, ok := byIdx[k]; ok {
				if !g.ok {
					rep.TagCorrupt++
				}
				tagT.Add(g.seq)
			}
		}
		mem := region.Bytes()
		put := reliability.NewTally(relMaxOps)
		for s := 0; s < relMaxOps; s++ {
			if binary.LittleEndian.Uint64(mem[s*8:]) == uint64(s)+1 {
				put.Add(uint64(s))
			}
		}
		st := nd.w.Stats()
		rep.Tag, rep.TagDups, rep.TagReord = tagT.Bitmap(), tagT.Dups, tagT.Reordered
		rep.AM, rep.AMDups, rep.AMReord = amT.Bitmap(), amT.Dups, amT.Reordered
		rep.Put = put.Bitmap()
		rep.Counter = binary.LittleEndian.Uint64(mem[relMaxOps*8:])
		rep.FailedOver, rep.FailedBack, rep.RouteLost = st.FailedOver, st.FailedBack, st.Probes.RouteLost
		// an endpoint still waiting for a sync's answer or with
		// requests outstanding: its state, for the failure the
		// generator reports
		odd := len(nd.errs) > 0
		nd.w.lock()
		for _, ep := range nd.w.live {
			if ep.err != nil || ep.fo != nil && (ep.fo.fov.syncing || ep.fo.fov.resend != 0 || !ep.queue.empty() || !ep.inflight.empty()) {
				odd = true
				fmt.Fprintf(os.Stderr, "reliability receiver: %s (error %v): %s\n", ep.name, ep.err, ep.foDump())
			}
		}
		nd.w.unlock()
		for len(nd.errs) > 0 {
			e := <-nd.errs
			fmt.Fprintf(os.Stderr, "reliability receiver: endpoint to rank %d failed: %v\n", e.rank, e.err)
		}
		if odd {
			for _, ev := range evs[max(0, len(evs)-12):] {
				fmt.Fprintf(os.Stderr, "reliability receiver: event at %s: %v\n", ev.At.Format("15:04:05.000"), ev)
			}
		}
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		fmt.Printf("report %s\n", b)
		return nil
	}
}

// relScenario is one fault and what must hold around it.
type relScenario struct {
	name  string
	rails int    // veth rails between the two namespaces
	tls   string // UCGO_TLS of both sides
	run   time.Duration
	// at: when the fault is injected (from the start of traffic); it
	// returns the undo, run at heal (0: never).
	at, heal time.Duration
	fault    func(s *relRun) (undo func() error, err error)
	path     bool // a path to the peer remains
	// check: what else must hold (the endpoint's status).
	check     func(t *testing.T, s *relRun)
	epTimeout time.Duration
	mode      string // UCGO_FAILOVER of both sides; "": relMode()
	noWatch   bool   // no device watchers on either side
	// early: a fault injected before the endpoints connect (undone by
	// the test)
	early func(s *relRun) (undo func() error, err error)
}

// relRun is one scenario's state in the generator.
type relRun struct {
	t           *testing.T
	earlyUndo   func() error  // undoes sc.early's fault
	connectTook time.Duration // our Connect
	sc          relScenario
	rails       *netns.Rails
	nd          *node
	ep          *Endpoint
	raddr       uint64
	rkey        *RKey
	child       *testproc.Child

	ops     []reliability.Op
	expect  []uint64 // gets: the value expected
	fetched map[uint64]int
	slots   []relSlot
	free    []int
	out     int
	lastPut int

	start, injected, healed  time.Time
	seen, flowing, failedBck time.Time // fault seen, traffic after it, failed back
	epErr                    error
	events                   []failover.Event
	getBad                   int
	// pref is the AM lane before the fault; away says the traffic left
	// it after the fault and had not come back when the fault was
	// removed.
	pref int
	away bool
	rep  *relReport // the receiver's report (finish), nil without one
}

// relSlot is the memory of one outstanding eager send, put, get or
// atomic, reused once it completed. A rendezvous send gets a buffer of
// its own: its peer may still read it after the send completed (an RDMA
// READ request retransmitted while the first answer was on its way is
// answered again from memory), so it is never written again.
type relSlot struct {
	buf  []byte
	hdr  [8]byte
	res  uint64
	word [8]byte
}

func relMode() string {
	if m := os.Getenv(relFailEnv); m != "" {
		return m
	}
	return "any"
}

// relStart builds the namespaces, starts the receiver in B and connects
// to it from A.
func relStart(t *testing.T, sc relScenario) *relRun {
	timeout := sc.epTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	t.Setenv(epTimeoutEnv, timeout.String())
	rails, err := netns.NewRails(t, sc.rails)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range append(append([]*netns.NS(nil), rails.A...), rails.B...) {
		if err := waitLinkRunning(ns, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	mode := sc.mode
	if mode == "" {
		mode = relMode()
	}
	env := map[string]string{EnvTLS: sc.tls, EnvErrMode: "peer", "UCGO_FAILOVER": mode, EnvNetDevices: "all"}
	if sc.noWatch {
		env[relNoWatchEnv] = "1"
	}
	s := &relRun{t: t, sc: sc, rails: rails, fetched: map[uint64]int{}, lastPut: -1}
	s.nd = &node{t: t, n: 2, procs: make([]*exec.Cmd, 2), kids: make([]*testproc.Child, 2), errs: make(chan epErr, 16)}
	err = rails.A[0].Do(func() error {
		ctx, err := newContext(Config{SourceTagMask: srcMask}, func(k string) string { return env[k] })
		if err != nil {
			return err
		}
		w, err := ctx.NewWorker()
		if err != nil {
			ctx.Close()
			return err
		}
		s.nd.ctx, s.nd.w = ctx, w
		if sc.noWatch {
			w.unwatchLinks()
		}
		t.Cleanup(func() {
			w.Close()
			ctx.Close()
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var envs []string
	for k, v := range env {
		envs = append(envs, k+"="+v)
	}
	in, _, a := s.nd.startChild(rails.B[0].Command(self, testproc.Args...), "reliability", 1, envs)
	s.child = s.nd.kids[1]
	addrs := []string{hex.EncodeToString(s.nd.w.Address()), a}
	if sc.early != nil {
		undo, err := sc.early(s)
		s.earlyUndo = undo
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { undo() })
	}
	fmt.Fprintln(in, strings.Join(addrs, " "))
	connectAt := time.Now()
	if err := rails.A[0].Do(func() error { return s.nd.connectAll(addrs) }); err != nil {
		t.Fatal(err)
	}
	s.connectTook = time.Since(connectAt)
	s.ep = s.nd.eps[1]
	var line, word, keyHex string
	if err := s.child.Scan(childWait, &line); err != nil || line != connectedLine {
		t.Fatalf("receiver did not connect: %q %v", line, err)
	}
	if err := s.child.Scan(childWait, &word, &s.raddr, &keyHex); err != nil || word != "keys" {
		t.Fatalf("receiver keys: %q %v", word, err)
	}
	kb, err := hex.DecodeString(keyHex)
	if err != nil {
		t.Fatal(err)
	}
	if s.rkey, err = s.ep.UnpackRKey(kb); err != nil {
		t.Fatal(err)
	}
	s.nd.w.SetFailoverHandler(func(ev failover.Event) {
		s.events = append(s.events, ev)
		if (ev.Kind == failover.FailedOver || ev.Kind == failover.Exhausted) && s.seen.IsZero() && !s.injected.IsZero() {
			s.seen = time.Now()
		}
	})
	s.pref = s.ep.amLane
	s.ops = make([]reliability.Op, 0, relMaxOps)
	s.expect = make([]uint64, relMaxOps)
	s.slots = make([]relSlot, relWindow)
	for i := range s.slots {
		s.slots[i].buf = make([]byte, 2048)
		s.free = append(s.free, i)
	}
	return s
}

// post starts operation seq of the rotation in a free slot.
func (s *relRun) post() {
	seq := len(s.ops)
	kind := relKinds[seq%len(relKinds)]
	si := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	sl := &s.slots[si]
	s.ops = append(s.ops, reliability.Op{Kind: kind})
	s.out++
	p := &Params{UserData: [2]int{seq, si}, Callback: s.done}
	var r *Request
	switch kind {
	case reliability.TagEager, reliability.TagRndv:
		buf := sl.buf[:16+seq%2*2000]
		if kind == reliability.TagRndv {
			buf = make([]byte, relRndvLen)
		}
		reliability.Fill(buf, uint64(seq))
		r = s.ep.TagSend(buf, mkTag(0, relTagData), p)
	case reliability.AM, reliability.AMRndv:
		buf := sl.buf[:64]
		if kind == reliability.AMRndv {
			buf = make([]byte, relAMRndv)
		}
		reliability.Fill(buf, uint64(seq))
		binary.LittleEndian.PutUint64(sl.hdr[:], uint64(seq))
		r = s.ep.AMSend(relAMID, sl.hdr[:], buf, p)
	case reliability.Put:
		binary.LittleEndian.PutUint64(sl.word[:], uint64(seq)+1)
		r = s.ep.Put(sl.word[:], s.raddr+uint64(seq)*8, s.rkey, p)
	case reliability.Get:
		from := seq // never written: reads 0
		if s.lastPut >= 0 {
			from, s.expect[seq] = s.lastPut, uint64(s.lastPut)+1
		}
		clear(sl.word[:])
		r = s.ep.Get(sl.word[:], s.raddr+uint64(from)*8, s.rkey, p)
	case reliability.Atomic:
		r = s.ep.AtomicFetch(AtomicAdd, 1, 0, &sl.res, s.raddr+relMaxOps*8, s.rkey, p)
	}
	r.Release()
}

// done records a completion (from Progress).
func (s *relRun) done(r *Request) {
	ids := r.UserData().([2]int)
	seq, si := ids[0], ids[1]
	op := &s.ops[seq]
	op.Done++
	if op.Done > 1 {
		return
	}
	s.out--
	s.free = append(s.free, si)
	op.Err = r.Err()
	op.Stamp = time.Now()
	if op.Err != nil {
		return
	}
	if !s.seen.IsZero() && s.flowing.IsZero() {
		s.flowing = op.Stamp
	}
	sl := &s.slots[si]
	switch op.Kind {
	case reliability.Put:
		s.lastPut = max(s.lastPut, seq)
	case reliability.Get:
		if binary.LittleEndian.Uint64(sl.word[:]) != s.expect[seq] {
			s.getBad++
		}
	case reliability.Atomic:
		s.fetched[sl.res]++
	}
}

// drive runs the traffic for the scenario's time with its fault, then
// waits (bounded) for every request to complete. It runs in namespace A,
// where the worker lives: a lane connected again dials from there.
func (s *relRun) drive() {
	if err := s.rails.A[0].Do(s.driveIn); err != nil {
		s.t.Fatal(err)
	}
}

func (s *relRun) driveIn() error {
	// netns.Do re-raises a panic on the test's goroutine: keep where it
	// happened.
	defer func() {
		if p := recover(); p != nil {
			panic(fmt.Sprintf("%v\n%s", p, debug.Stack()))
		}
	}()
	t := s.t
	w := s.nd.w
	var undo func() error
	s.start = time.Now()
	for {
		now := time.Now()
		el := now.Sub(s.start)
		if s.injected.IsZero() && s.sc.fault != nil && el >= s.sc.at {
			u, err := s.sc.fault(s)
			if err != nil {
				return fmt.Errorf("injecting %s: %w", s.sc.name, err)
			}
			undo, s.injected = u, time.Now()
		}
		if undo != nil && s.healed.IsZero() && s.sc.heal > 0 && el >= s.sc.heal {
			if err := undo(); err != nil {
				return fmt.Errorf("healing %s: %w", s.sc.name, err)
			}
			s.healed = time.Now()
			s.away = s.ep.amLane != s.pref
		}
		if el >= s.sc.run || len(s.ops) >= relMaxOps {
			break
		}
		for len(s.free) > 0 && len(s.ops) < relMaxOps && s.ep.Err() == nil {
			s.post()
		}
		w.Progress()
		s.pollErr()
		s.watchLane()
	}
	if undo != nil && s.healed.IsZero() && s.sc.heal > 0 {
		if err := undo(); err != nil {
			return fmt.Errorf("healing %s: %w", s.sc.name, err)
		}
		s.healed = time.Now()
		s.away = s.ep.amLane != s.pref
	}
	for stop := time.Now().Add(30 * time.Second); s.out > 0 && time.Now().Before(stop); {
		w.Progress()
		s.pollErr()
		s.watchLane()
	}
	// A failed lane comes back by its probes (redial, UpProbes answers):
	// give the fail-back a few seconds beyond the traffic.
	for stop := time.Now().Add(5 * time.Second); s.away && s.failedBck.IsZero() && time.Now().Before(stop); {
		w.Progress()
		s.watchLane()
	}
	// Stragglers: a second completion of a request would show up here.
	for stop := time.Now().Add(200 * time.Millisecond); time.Now().Before(stop); {
		w.Progress()
	}
	if s.out > 0 {
		w.lock()
		st := s.ep.foDump()
		w.unlock()
		t.Errorf("%d requests still outstanding 30 s after the traffic ended; endpoint: %s", s.out, st)
	}
	return nil
}

// watchLane notes when the traffic is back on its preferred lane after
// the fault was removed: the time to fail back.
func (s *relRun) watchLane() {
	if s.away && s.failedBck.IsZero() && s.ep.amLane == s.pref && s.ep.lanes[s.pref].failed == nil {
		s.failedBck = time.Now()
	}
}

func (s *relRun) pollErr() {
	select {
	case e := <-s.nd.errs:
		if s.epErr == nil {
			s.epErr = e.err
			if s.seen.IsZero() && !s.injected.IsZero() {
				s.seen = time.Now()
			}
		}
	default:
	}
}

// finish ends the receiver, reads its report and builds the row.
func (s *relRun) finish() reliability.Row {
	t := s.t
	row := reliability.Row{Scenario: s.sc.name, Sent: len(s.ops), Path: s.sc.path,
		Detect: -1, Failover: -1, Failback: -1}
	var rep *relReport
	defer func() { s.rep = rep }()
	if s.child.Cmd.ProcessState == nil {
		fmt.Fprintln(s.child.Stdin, "end")
		var word string
		var js json.RawMessage
		if err := s.child.Scan(childWait, &word, &js); err == nil && word == "report" {
			rep = &relReport{}
			if err := json.Unmarshal(js, rep); err != nil {
				t.Fatalf("receiver report: %v", err)
			}
		} else if s.sc.path {
			t.Fatalf("no report from the receiver: %q %v", word, err)
		}
	}
	okAtomics := 0
	var tagT, amT, putT *reliability.Tally
	if rep != nil {
		tagT, amT, putT = reliability.FromBitmap(rep.Tag), reliability.FromBitmap(rep.AM), reliability.FromBitmap(rep.Put)
	}
	for seq, op := range s.ops {
		if op.Done != 1 {
			row.Completions++
		}
		if op.Err != nil {
			row.Failed++
		}
		delivered := false
		switch op.Kind {
		case reliability.TagEager, reliability.TagRndv:
			delivered = rep != nil && tagT.Has(uint64(seq)) || rep == nil && op.Err == nil
		case reliability.AM, reliability.AMRndv:
			delivered = rep != nil && amT.Has(uint64(seq)) || rep == nil && op.Err == nil
		case reliability.Put:
			delivered = rep != nil && putT.Has(uint64(seq)) || rep == nil && op.Err == nil
		case reliability.Get, reliability.Atomic:
			delivered = op.Err == nil
		}
		if op.Kind == reliability.Atomic && op.Err == nil {
			okAtomics++
		}
		if delivered {
			row.Delivered++
		}
	}
	row.Corrupt = s.getBad
	row.Delivered -= s.getBad
	for _, n := range s.fetched {
		row.Duplicated += n - 1
	}
	if rep != nil {
		row.Duplicated += rep.TagDups + rep.AMDups
		row.Reordered = rep.TagReord + rep.AMReord
		row.Corrupt += rep.TagCorrupt + rep.AMCorrupt
		if extra := int(rep.Counter) - okAtomics - s.unknownAtomics(); extra > 0 {
			row.Duplicated += extra
		}
	}
	row.Lost = row.Sent - row.Delivered - row.Corrupt
	if !s.seen.IsZero() {
		row.Detect = s.seen.Sub(s.injected)
		if !s.flowing.IsZero() {
			row.Failover = s.flowing.Sub(s.seen)
		}
	}
	if !s.failedBck.IsZero() {
		row.Failback = s.failedBck.Sub(s.healed)
	}
	for _, ev := range s.events {
		t.Logf("%s: failover event: %v", s.sc.name, ev)
		if (ev.Kind == failover.FailedOver || ev.Kind == failover.FailedBack) && ev.From.Index == ev.To.Index {
			t.Errorf("%s: an event moves traffic from lane %d to itself: %v", s.sc.name, ev.From.Index, ev)
		}
	}
	s.logFailures()
	return row
}

// logFailures logs, per kind of operation, how many requests failed and
// the first status, and the first few sequence numbers the receiver
// missed.
func (s *relRun) logFailures() {
	var n [reliability.NumKinds]int
	var first [reliability.NumKinds]error
	for _, op := range s.ops {
		if op.Err != nil {
			if n[op.Kind]++; first[op.Kind] == nil {
				first[op.Kind] = op.Err
			}
		}
	}
	for k := range n {
		if n[k] > 0 {
			s.t.Logf("%s: %d %v requests failed, the first with: %v", s.sc.name, n[k], reliability.Kind(k), first[k])
		}
	}
}

// unknownAtomics counts fetching atomics whose outcome ucp could not
// settle: they may have been applied once.
func (s *relRun) unknownAtomics() int {
	n := 0
	for _, op := range s.ops {
		if op.Kind == reliability.Atomic && errors.Is(op.Err, failover.ErrOutcomeUnknown) {
			n++
		}
	}
	return n
}

func TestReliability(t *testing.T) {
	netns.RequireRoot(t)
	var rows []reliability.Row
	t.Cleanup(func() {
		var b strings.Builder
		reliability.Table(&b, rows)
		t.Logf("failover %s:\n%s", relMode(), b.String())
		fmt.Printf("reliability suite, failover %s:\n%s", relMode(), b.String())
	})
	for _, sc := range relScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			s := relStart(t, sc)
			s.drive()
			row := s.finish()
			rows = append(rows, row)
			t.Log(reliability.Header())
			t.Log(row)
			for _, p := range row.Problems() {
				t.Errorf("%s: %s", sc.name, p)
			}
			if sc.check != nil {
				sc.check(t, s)
			}
		})
	}
}
