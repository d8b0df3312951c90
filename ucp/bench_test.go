package ucp

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/failover"

	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/uct"
)

// Benchmarks run between this process (pinned to CPU 0) and a child
// process (pinned to the last CPU) over the default transports, in both
// error modes. Requests are waited for by spinning on Progress, as
// ucx_perftest does.

const (
	tagBench = 3
	bwWindow = 16 // rendezvous sends (and receives) in flight
	bwSize   = 1 << 20
)

func init() {
	// pong: pinned; echo every message back to its sender until tagQuit.
	childRoles["pong"] = func(nd *node) error {
		defer pinCPU(runtime.NumCPU() - 1)()
		defer childProfile()()
		buf := make([]byte, 64<<10)
		for {
			r := nd.w.TagRecv(buf, 0, 0, nil)
			spin(nd.w, r)
			if err := r.Err(); err != nil {
				return err
			}
			info := r.Info()
			r.Release()
			if uint32(info.Tag) == tagQuit {
				return nil
			}
			s := info.Sender.TagSend(buf[:info.Length], mkTag(nd.rank, uint32(info.Tag)), nil)
			spin(nd.w, s)
			if err := s.Err(); err != nil {
				return err
			}
			s.Release()
		}
	}
	// sink: pinned; keep bwWindow receives of tagBench posted on one
	// buffer, until tagQuit.
	childRoles["sink"] = func(nd *node) error {
		defer pinCPU(runtime.NumCPU() - 1)()
		defer childProfile()()
		buf := make([]byte, bwSize)
		var win [bwWindow]*Request
		for i := range win {
			win[i] = nd.w.TagRecv(buf, mkTag(0, tagBench), exact, nil)
		}
		quit := nd.w.TagRecv(nil, tagQuit, 0xffffffff, nil)
		for i := 0; ; i = (i + 1) % bwWindow {
			r := win[i]
			for !r.Done() && !quit.Done() {
				nd.w.Progress()
			}
			if quit.Done() {
				for _, r := range win {
					r.Cancel()
				}
				return quit.Err()
			}
			if err := r.Err(); err != nil {
				return err
			}
			r.Release()
			win[i] = nd.w.TagRecv(buf, mkTag(0, tagBench), exact, nil)
		}
	}
}

// childProfileEnv names a file for a benchmark child's CPU profile.
const childProfileEnv = "UCGO_UCP_CHILD_CPUPROFILE"

func childProfile() func() {
	name := os.Getenv(childProfileEnv)
	if name == "" {
		return func() {}
	}
	f, err := os.Create(name)
	if err != nil {
		return func() {}
	}
	pprof.StartCPUProfile(f)
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// pinCPU pins the calling goroutine's thread to cpu and returns a function
// undoing it.
func pinCPU(cpu int) func() {
	runtime.LockOSThread()
	var old, set unix.CPUSet
	unix.SchedGetaffinity(0, &old)
	set.Set(cpu)
	if runtime.NumCPU() > 1 {
		unix.SchedSetaffinity(0, &set)
	}
	return func() {
		unix.SchedSetaffinity(0, &old)
		runtime.UnlockOSThread()
	}
}

// spin progresses w until r completes.
func spin(w *Worker, r *Request) {
	for !r.Done() {
		w.Progress()
	}
}

var benchModes = []struct {
	name string
	mode ErrorMode
}{{"none", ErrorModeNone}, {"peer", ErrorModePeer}}

// benchWorld starts the child of a benchmark. UCGO_FAILOVER, which the
// child reads, chooses the failover mode of this side too, so that paired
// runs compare failover on and off.
func benchWorld(b *testing.B, role string, mode ErrorMode) *node {
	return world(b, 2, role, Config{ErrorMode: mode, Failover: benchFailover(b)}, EnvErrMode+"="+mode.String())
}

// benchFailover is the failover policy UCGO_FAILOVER names (off if
// unset).
func benchFailover(b *testing.B) failover.Policy {
	var p failover.Policy
	if v := os.Getenv(EnvFailover); v != "" {
		m, err := failover.ParseMode(v)
		if err != nil {
			b.Fatal(err)
		}
		p.Mode = m
	}
	return p
}

func benchQuit(nd *node) {
	s := nd.eps[1].TagSend(nil, mkTag(0, tagQuit), nil)
	spin(nd.w, s)
	nd.must(s.Err())
	nd.exitOK(1)
}

// BenchmarkTagLatency: 8-byte tag ping-pong; ns/oneway is half the round
// trip.
func BenchmarkTagLatency(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) { benchTagLatency(b, benchWorld(b, "pong", m.mode), 8) })
	}
}

// tagRoundTrip sends out on ep and receives the peer's echo into in,
// spinning w until both complete.
func tagRoundTrip(b *testing.B, w *Worker, ep *Endpoint, out, in []byte) {
	r := w.TagRecv(in, mkTag(1, tagBench), exact, nil)
	s := ep.TagSend(out, mkTag(0, tagBench), nil)
	spin(w, s)
	spin(w, r)
	if err := s.Err(); err != nil {
		b.Fatal(err)
	}
	if err := r.Err(); err != nil {
		b.Fatal(err)
	}
	s.Release()
	r.Release()
}

func benchTagLatency(b *testing.B, nd *node, size int) {
	defer pinCPU(0)()
	ep, w := nd.eps[1], nd.w
	out, in := pattern(size, 1), make([]byte, size)
	round := func() { tagRoundTrip(b, w, ep, out, in) }
	for i := 0; i < 1000; i++ {
		round()
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		round()
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(el.Nanoseconds())/float64(2*b.N), "ns/oneway")
	benchQuit(nd)
}

// BenchmarkTagBandwidth: 1 MiB tag sends (rendezvous) with bwWindow in
// flight; a send completes when the receiver has the data.
func BenchmarkTagBandwidth(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) { benchTagBandwidth(b, benchWorld(b, "sink", m.mode), bwSize, bwWindow) })
	}
}

func benchTagBandwidth(b *testing.B, nd *node, size, window int) {
	defer pinCPU(0)()
	ep, w := nd.eps[1], nd.w
	buf := pattern(size, 1)
	tag := mkTag(0, tagBench)
	win := make([]*Request, window)
	run := func(n int) {
		for i := 0; i < n; i++ {
			k := i % window
			if r := win[k]; r != nil {
				spin(w, r)
				if err := r.Err(); err != nil {
					b.Fatal(err)
				}
				r.Release()
			}
			win[k] = ep.TagSend(buf, tag, nil)
		}
		for k, r := range win {
			if r != nil {
				spin(w, r)
				if err := r.Err(); err != nil {
					b.Fatal(err)
				}
				r.Release()
				win[k] = nil
			}
		}
	}
	run(2 * window)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	run(b.N)
	b.StopTimer()
	benchQuit(nd)
}

// BenchmarkTagCPU measures what the 8-byte ping-pong costs in CPU time,
// which a loaded machine perturbs much less than latency: two workers of
// this process over shm, driven by one pinned goroutine, and the thread's
// CPU time (its CPU clock) per round trip (two messages, four requests).
func BenchmarkTagCPU(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) { benchTagCPU(b, Config{ErrorMode: m.mode, Failover: benchFailover(b)}, 8) })
	}
}

// BenchmarkTagCPUThreadSafe is BenchmarkTagCPU with thread-safe workers
// (Config.ThreadSafe) driven by one goroutine: the CPU cost of their
// locks (worker and transport) on the eager path.
func BenchmarkTagCPUThreadSafe(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) { benchTagCPU(b, Config{ErrorMode: m.mode, ThreadSafe: true}, 8) })
	}
}

// BenchmarkRndvCPU is BenchmarkTagCPU for 4 KiB messages sent by
// rendezvous (RTS, GET, ATS): the CPU cost of the protocol.
func BenchmarkRndvCPU(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			benchTagCPU(b, Config{ErrorMode: m.mode, ShortThresh: -1, RndvThresh: 1}, 4096)
		})
	}
}

func benchTagCPU(b *testing.B, cfg Config, size int) {
	pair := shmPair
	if cfg.Transports != nil {
		pair = workerPair // the transports cfg names
	}
	ws, ep0 := pair(b, cfg)
	out, in := make([]byte, size), make([]byte, size)
	// one message each way: the first one also connects back
	var ep1 *Endpoint
	oneway := func(from, to *Worker, ep *Endpoint) *Endpoint {
		r := to.TagRecv(in, 5, exact, nil)
		s := ep.TagSend(out, 5, nil)
		for !r.Done() || !s.Done() {
			from.Progress()
			to.Progress()
		}
		if r.Err() != nil || s.Err() != nil {
			b.Fatal(r.Err(), s.Err())
		}
		sender := r.Info().Sender
		r.Release()
		s.Release()
		return sender
	}
	ep1 = oneway(ws[0], ws[1], ep0)
	defer pinCPU(0)()
	b.ReportAllocs()
	b.ResetTimer()
	c0 := threadCPU()
	for i := 0; i < b.N; i++ {
		oneway(ws[0], ws[1], ep0)
		oneway(ws[1], ws[0], ep1)
	}
	b.ReportMetric(float64(threadCPU()-c0)/float64(b.N), "cpu-ns/roundtrip")
}

// threadCPU is the calling thread's CPU time in ns. The thread's CPU
// clock counts in ns; getrusage's user and system times would count
// scheduler ticks, a few ms, as coarse as a short benchmark's run.
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_THREAD, &ru)
		return ru.Utime.Nano() + ru.Stime.Nano()
	}
	return ts.Nano()
}

// amBench is the active message id of BenchmarkAMEager.
const amBench = 40

// BenchmarkAMEager: an 8-byte active message with an 8-byte header
// between two workers of this process over shm (one fragment, eager),
// the handler reading it in place; allocs/op counts both sides.
func BenchmarkAMEager(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			ws, ep := shmPair(b, Config{ErrorMode: m.mode})
			got, sum := 0, 0
			ws[1].SetAMHandler(amBench, func(m *AMMessage) {
				got++
				sum += int(m.Header[0]) + int(m.Data[0])
			})
			hdr, data := make([]byte, 8), make([]byte, 8)
			one := func() {
				want := got + 1
				s := ep.AMSend(amBench, hdr, data, nil)
				for !s.Done() || got < want {
					ws[0].Progress()
					ws[1].Progress()
				}
				if err := s.Err(); err != nil {
					b.Fatal(err)
				}
				s.Release()
			}
			for i := 0; i < 1000; i++ {
				one()
			}
			defer pinCPU(0)()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				one()
			}
		})
	}
}

// shmPair opens two workers of this process with cfg over shm, closed
// when tb ends, and connects the first to the second.
func shmPair(tb testing.TB, cfg Config) ([2]*Worker, *Endpoint) {
	tb.Helper()
	cfg.Transports = []uct.Component{shm.New()}
	return workerPair(tb, cfg)
}

// workerPair is shmPair over cfg's transports (the default ones if nil).
func workerPair(tb testing.TB, cfg Config) ([2]*Worker, *Endpoint) {
	tb.Helper()
	ctx, err := newContext(cfg, func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ctx.Close() })
	var ws [2]*Worker
	for i := range ws {
		if ws[i], err = ctx.NewWorker(); err != nil {
			tb.Fatal(err)
		}
		w := ws[i]
		tb.Cleanup(func() { w.Close() })
	}
	ep, err := ws[0].Connect(ws[1].Address(), EPParams{})
	if err != nil {
		tb.Fatal(err)
	}
	return ws, ep
}
