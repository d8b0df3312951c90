package ucp

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/transport/rc/verbs"
	"golang.org/x/sys/unix"
)

// BenchmarkRailsPaired is BenchmarkRails with one rail and two paired in
// time: the two processes (two namespaces joined by two rails) each have
// two workers, one whose context stripes over both rails (MaxRndvRails 2)
// and one that uses one rail (MaxRndvRails 1), and the 1 MiB transfers
// take turns between the two pairs in blocks of pairedBlock transfers
// (pairedBlockLimited when rate-limited), so a load that comes and goes
// on the machine weighs on both alike. Each turn runs both blocks, in
// an order that swaps from turn to turn. A block starts with pairedWarm
// transfers, untimed, that bring its pair's state back after the other
// pair's block; it is then timed from its first transfer's start to its
// last transfer's completion, with the window (bwWindow; railsWindow
// when rate-limited) kept full in between, since transfers in flight
// together share the rails and complete close together, so only the
// whole block's time gives its rate. Its data are checked after the
// clock stops: a Put block is read back, a Get block's buffer, cleared
// before, must hold the peer's memory, a tag block's receive buffer,
// cleared before, is compared by the receiver.
//
// MB/s-1rail and MB/s-2rail are the medians over the blocks; ratio is
// the median of the two-rail to one-rail ratios of the turns, ratio-p10
// their tenth percentile and below1-frac the fraction of turns whose
// ratio is below 1. cpu-ms/MiB is this process's CPU time (every
// thread: the driving one, which spins while it waits, and the devices'
// background goroutines) per MiB, median over each pair's blocks: time
// this process was preempted does not count in it, time it spun waiting
// for the peer does. retx/op and timeouts/op count each pair's rc
// retransmits and timeouts (local ACK timeouts and READ retries) per
// transfer. sendmmsg/op, recv/op and recv-empty/op count each pair's
// send calls, receive calls that found data and receive calls that found
// the socket empty on this side per transfer; stalls/op the transfers
// whose chunks the lanes refused for lack of resources (they waited on
// the stalled list) per transfer. single/op, probes and switches are
// the two-rail pair's rail gate on this side (railgate.go; put and get:
// a tag transfer's data is moved by the receiver): the share of its
// transfers on one rail, its probes and its switches. b.N counts the
// transfers of each pair.
//
//	go test -c -o /tmp/ucp.test ./ucp && for i in 1 2 3 4 5; do
//	  /tmp/ucp.test -test.run '^$' -test.bench 'BenchmarkRailsPaired/put/unlimited$' -test.benchtime 3s
//	done
func BenchmarkRailsPaired(b *testing.B) {
	for _, op := range []string{"tag", "put", "get"} {
		for _, l := range railsLimits() {
			b.Run(op+"/"+l.name, func(b *testing.B) { benchRailsPaired(b, op, l.mbit) })
		}
	}
}

const (
	// pairedOpEnv tells the child of BenchmarkRailsPaired the operation
	// (tag, put or get).
	pairedOpEnv = "UCGO_UCP_PAIRED_OP"
	// tagPairAddr: the child's first message, the address of its
	// one-rail worker and, for put and get, its memory's keys
	tagPairAddr = 0x7e0
	// tagPairCheck: rank 0 asks the child to check a tag block's data
	// (one byte, the block's pattern seed); tagPairCheckOK answers (one
	// byte, 1 if the data matched)
	tagPairCheck   = 0x7e1
	tagPairCheckOK = 0x7e2
	// pairedBlock 1 MiB transfers make a block with unlimited rails:
	// a few tens of ms, short enough that most blocks run between two
	// changes of the machine's load
	pairedBlock = 32
	// pairedBlockLimited is the block with rate-limited rails: 8 MiB
	// at 50 MB/s (one 400 Mbit/s rail) take about 170 ms
	pairedBlockLimited = 8
	// pairedWarm transfers, untimed, start each block
	pairedWarm = 4
	// pairedLimit bounds a whole run, whatever b.N
	pairedLimit = 10 * time.Minute
)

// pairedSide is one worker of the child of BenchmarkRailsPaired.
type pairedSide struct {
	w     *Worker
	buf   []byte // tag: receive buffer of every window slot
	win   [railsWindow]*Request
	next  int
	cbuf  [1]byte
	check *Request
	reply *Request
}

// poll takes s's completed tag receives and posts them again, answers a
// check and releases a sent answer.
func (s *pairedSide) poll() error {
	for s.win[s.next].Done() {
		if err := s.win[s.next].Err(); err != nil {
			return err
		}
		s.win[s.next].Release()
		s.win[s.next] = s.w.TagRecv(s.buf, mkTag(0, tagBench), exact, nil)
		s.next = (s.next + 1) % len(s.win)
	}
	if s.reply != nil && s.reply.Done() {
		if err := s.reply.Err(); err != nil {
			return err
		}
		s.reply.Release()
		s.reply = nil
	}
	if !s.check.Done() {
		return nil
	}
	if err := s.check.Err(); err != nil {
		return err
	}
	var ok byte
	if bytes.Equal(s.buf, pattern(len(s.buf), s.cbuf[0])) {
		ok = 1
	}
	clear(s.buf)
	s.reply = s.check.Info().Sender.TagSend([]byte{ok}, mkTag(1, tagPairCheckOK), nil)
	s.check.Release()
	s.check = s.w.TagRecv(s.cbuf[:], mkTag(0, tagPairCheck), exact, nil)
	return nil
}

func (s *pairedSide) cancel() {
	for _, r := range append(s.win[:], s.check, s.reply) {
		if r != nil {
			r.Cancel()
		}
	}
}

func init() {
	// railpair: a second worker with MaxRndvRails 1 beside nd's; send
	// its address (and, for put and get, the keys of 1 MiB of registered
	// memory per worker) to rank 0; for tag keep railsWindow receives
	// and a check receive posted on each worker; progress both workers
	// until tagQuit.
	childRoles["railpair"] = func(nd *node) error {
		op := os.Getenv(pairedOpEnv)
		ctx2, err := newContext(Config{SourceTagMask: srcMask, MaxRndvRails: 1}, func(k string) string {
			if k == EnvMaxRndvRails {
				return "1"
			}
			return os.Getenv(k)
		})
		if err != nil {
			return err
		}
		defer ctx2.Close()
		w2, err := ctx2.NewWorker()
		if err != nil {
			return err
		}
		defer w2.Close()
		sides := []*pairedSide{{w: nd.w}, {w: w2}}
		a := w2.Address()
		msg := binary.LittleEndian.AppendUint16(nil, uint16(len(a)))
		msg = append(msg, a...)
		for _, s := range sides {
			if op == "tag" {
				s.buf = make([]byte, bwSize)
				for i := range s.win {
					s.win[i] = s.w.TagRecv(s.buf, mkTag(0, tagBench), exact, nil)
				}
				s.check = s.w.TagRecv(s.cbuf[:], mkTag(0, tagPairCheck), exact, nil)
				continue
			}
			reg := pattern(bwSize, 5)
			m, err := s.w.MemMap(reg)
			if err != nil {
				return err
			}
			defer m.Close()
			k := m.PackRKey()
			msg = binary.LittleEndian.AppendUint64(msg, m.Address())
			msg = binary.LittleEndian.AppendUint16(msg, uint16(len(k)))
			msg = append(msg, k...)
		}
		if err := nd.wait(nd.eps[0].TagSend(msg, mkTag(nd.rank, tagPairAddr), nil)); err != nil {
			return err
		}
		quit := nd.w.TagRecv(nil, tagQuit, 0xffffffff, nil)
		for !quit.Done() {
			for _, s := range sides {
				s.w.Progress()
				if op != "tag" {
					continue
				}
				if err := s.poll(); err != nil {
					return err
				}
			}
		}
		if op == "tag" {
			for _, s := range sides {
				s.cancel()
			}
		}
		return quit.Err()
	}
}

// pairedPair is one worker pair of BenchmarkRailsPaired on rank 0's side.
type pairedPair struct {
	ctx    *Context
	w      *Worker
	ep     *Endpoint
	mem    remoteMem // put and get: the child's memory
	out    []byte    // put and tag: the data sent
	in     []byte    // get: the data read; put: the data read back
	win    []*Request
	mbs    []float64 // MB/s of each block
	cpu    []float64 // this process's CPU ms per MiB of each block
	checks int       // blocks whose data were checked
}

func benchRailsPaired(b *testing.B, op string, mbit int) {
	if os.Geteuid() != 0 {
		b.Skip("BenchmarkRailsPaired needs root: it makes network namespaces joined by veth rails")
	}
	b.Setenv(epTimeoutEnv, "30s")
	r, err := netns.NewRails(b, 2)
	if err != nil {
		b.Fatal(err)
	}
	window, block := bwWindow, pairedBlock
	if mbit > 0 {
		window, block = railsWindow, pairedBlockLimited
		for i := range r.A {
			for _, ns := range []*netns.NS{r.A[i], r.B[i]} {
				if err := ns.SetRate(mbit); err != nil {
					b.Skipf("tc: %v", err)
				}
			}
		}
	}
	env := []string{EnvMaxRndvRails + "=2", pairedOpEnv + "=" + op}
	nd := railsWorldOn(b, r, "railpair", Config{MaxRndvRails: 2}, env...)
	deadline := time.Now().Add(pairedLimit)
	wait := func(w *Worker, q *Request) {
		b.Helper()
		spinUntil(b, w, q, deadline)
		if err := q.Err(); err != nil {
			b.Fatal(err)
		}
	}

	// the child's one-rail worker's address and keys
	buf := make([]byte, 4096)
	hello := nd.w.TagRecv(buf, mkTag(1, tagPairAddr), exact, nil)
	wait(nd.w, hello)
	msg := buf[:hello.Info().Length]
	hello.Release()
	n := int(binary.LittleEndian.Uint16(msg))
	addr2 := append([]byte(nil), msg[2:2+n]...)
	msg = msg[2+n:]
	var one *pairedPair
	err = r.A[0].Do(func() error {
		ctx2, err := newContext(Config{SourceTagMask: srcMask, MaxRndvRails: 1}, func(k string) string {
			switch k {
			case EnvTLS:
				return "rc"
			case EnvNetDevices:
				return "all"
			case EnvMaxRndvRails:
				return "1"
			}
			return ""
		})
		if err != nil {
			return err
		}
		b.Cleanup(func() { ctx2.Close() })
		w2, err := ctx2.NewWorker()
		if err != nil {
			return err
		}
		b.Cleanup(func() { w2.Close() })
		ep2, err := w2.Connect(addr2, EPParams{Timeout: testEPParams()})
		if err != nil {
			return err
		}
		one = &pairedPair{ctx: ctx2, w: w2, ep: ep2}
		return nil
	})
	if err != nil {
		b.Fatalf("one-rail worker in %s: %v", r.A[0].Name(), err)
	}
	pairs := [2]*pairedPair{one, {ctx: nd.ctx, w: nd.w, ep: nd.eps[1]}} // one rail, two rails
	for _, p := range []*pairedPair{pairs[1], pairs[0]} {
		p.win = make([]*Request, window)
		p.out, p.in = make([]byte, bwSize), make([]byte, bwSize)
		if op == "tag" {
			continue
		}
		if len(msg) < 10 {
			b.Fatal("short key message")
		}
		a := binary.LittleEndian.Uint64(msg)
		kn := int(binary.LittleEndian.Uint16(msg[8:]))
		k, err := p.ep.UnpackRKey(msg[10 : 10+kn])
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { k.Close() })
		p.mem = remoteMem{a, k}
		msg = msg[10+kn:]
	}

	defer pinCPU(0)()
	want := pattern(bwSize, 5) // the child's memory, for get
	// run runs a block of n timed transfers (after pairedWarm untimed)
	// on p with data seeded by seed, checks the data and returns the
	// block's MB/s.
	run := func(p *pairedPair, n int, seed byte) float64 {
		b.Helper()
		switch op {
		case "get":
			clear(p.in)
		default:
			fillPattern(p.out, seed)
		}
		issue := func() *Request {
			switch op {
			case "put":
				return p.ep.Put(p.out, p.mem.addr, p.mem.key, nil)
			case "get":
				return p.ep.Get(p.in, p.mem.addr, p.mem.key, nil)
			}
			return p.ep.TagSend(p.out, mkTag(0, tagBench), nil)
		}
		// transfers moves n transfers with the window kept full and
		// returns when the last has completed
		transfers := func(n int) {
			for i := 0; i < n; i++ {
				if q := p.win[i%window]; q != nil {
					wait(p.w, q)
					q.Release()
				}
				p.win[i%window] = issue()
			}
			for j := max(0, n-window); j < n; j++ {
				q := p.win[j%window]
				wait(p.w, q)
				q.Release()
				p.win[j%window] = nil
			}
		}
		transfers(pairedWarm)
		c0 := processCPU()
		t0 := time.Now()
		transfers(n)
		el := time.Since(t0)
		p.cpu = append(p.cpu, float64(processCPU()-c0)/1e6/float64(n))
		switch op {
		case "put":
			q := p.ep.Flush(nil)
			wait(p.w, q)
			q.Release()
			clear(p.in)
			q = p.ep.Get(p.in, p.mem.addr, p.mem.key, nil)
			wait(p.w, q)
			q.Release()
			if !bytes.Equal(p.in, p.out) {
				b.Fatalf("put, seed %d: the peer's memory differs from the data put", seed)
			}
		case "get":
			if !bytes.Equal(p.in, want) {
				b.Fatalf("get: the data read differ from the peer's memory")
			}
		case "tag":
			var ok [1]byte
			rq := p.w.TagRecv(ok[:], mkTag(1, tagPairCheckOK), exact, nil)
			sq := p.ep.TagSend([]byte{seed}, mkTag(0, tagPairCheck), nil)
			wait(p.w, sq)
			sq.Release()
			wait(p.w, rq)
			rq.Release()
			if ok[0] != 1 {
				b.Fatalf("tag, seed %d: the data received differ from the data sent", seed)
			}
		}
		p.checks++
		return float64(n) * bwSize / el.Seconds() / 1e6
	}
	// warm both pairs: wireup, registration caches, the window
	var seed byte
	for i := 0; i < 4; i++ {
		seed++
		run(pairs[i&1], pairedBlock/4, seed)
	}
	pairs[0].cpu, pairs[1].cpu = nil, nil
	if got := len(pairs[1].ep.rails); got != 2 {
		b.Fatalf("two-rail pair stripes over %d rails", got)
	}
	if got := len(pairs[0].ep.rails); got != 0 {
		b.Fatalf("one-rail pair stripes over %d rails", got)
	}
	before := [2]verbs.Counters{rcCounters(pairs[0].ctx), rcCounters(pairs[1].ctx)}
	gate := pairs[1].w.Stats().Rails
	stalls := [2]int{pairs[0].w.chunkStalls, pairs[1].w.chunkStalls}
	b.ReportAllocs()
	b.ResetTimer()
	var ratios []float64
	for turn, doneN := 0, 0; doneN < b.N; turn++ {
		n := min(block, b.N-doneN)
		var mbs [2]float64
		for i := 0; i < 2; i++ {
			k := (turn + i) & 1 // the pair that goes first swaps each turn
			seed++
			mbs[k] = run(pairs[k], n, seed)
			pairs[k].mbs = append(pairs[k].mbs, mbs[k])
		}
		ratios = append(ratios, mbs[1]/mbs[0])
		doneN += n
	}
	b.StopTimer()
	below := 0
	for _, x := range ratios {
		if x < 1 {
			below++
		}
	}
	b.ReportMetric(median(pairs[0].mbs), "MB/s-1rail")
	b.ReportMetric(median(pairs[1].mbs), "MB/s-2rail")
	b.ReportMetric(median(ratios), "ratio")
	b.ReportMetric(ratios[len(ratios)/10], "ratio-p10") // median sorted them
	b.ReportMetric(float64(below)/float64(len(ratios)), "below1-frac")
	for k, name := range []string{"1rail", "2rail"} {
		b.ReportMetric(median(pairs[k].cpu), "cpu-ms/MiB-"+name)
		c, o := rcCounters(pairs[k].ctx), before[k]
		b.ReportMetric(float64(c.Retransmits-o.Retransmits)/float64(b.N), "retx/op-"+name)
		b.ReportMetric(float64(c.Timeouts-o.Timeouts+c.ReadRetries-o.ReadRetries)/float64(b.N), "timeouts/op-"+name)
		b.ReportMetric(float64(c.TxCalls-o.TxCalls)/float64(b.N), "sendmmsg/op-"+name)
		b.ReportMetric(float64(c.RxCalls-o.RxCalls-(c.RxEmpty-o.RxEmpty))/float64(b.N), "recv/op-"+name)
		b.ReportMetric(float64(c.RxEmpty-o.RxEmpty)/float64(b.N), "recv-empty/op-"+name)
		b.ReportMetric(float64(pairs[k].w.chunkStalls-stalls[k])/float64(b.N), "stalls/op-"+name)
	}
	// the rail gate's choices on this side (put and get; a tag
	// transfer's data is moved by the receiver): the share of the
	// transfers it put on one rail, its probes and switches
	if g := pairs[1].w.Stats().Rails; g.Striped+g.Single > gate.Striped+gate.Single {
		b.ReportMetric(float64(g.Single-gate.Single)/float64(g.Striped+g.Single-gate.Striped-gate.Single), "single/op")
		b.ReportMetric(float64(g.Probes-gate.Probes), "probes")
		b.ReportMetric(float64(g.Switches-gate.Switches), "switches")
	}
	if pairs[0].checks == 0 || pairs[1].checks == 0 {
		b.Fatal("no block was checked")
	}
	benchQuit(nd)
}

// processCPU is the CPU time this process has used (user and system).
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fillPattern writes pattern(len(b), seed) into b.
func fillPattern(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i*7) + seed
	}
}

// spinUntil progresses w until r completes, failing b at deadline.
func spinUntil(b *testing.B, w *Worker, r *Request, deadline time.Time) {
	for i := 0; !r.Done(); i++ {
		w.Progress()
		if i%1024 == 1023 && time.Now().After(deadline) {
			b.Fatalf("a request is still pending after %v", pairedLimit)
		}
	}
}
