package ucp

import (
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
)

// BenchmarkTagLatencyFailover is BenchmarkTagLatency between two
// processes with failover off and on, paired in time: each process has
// two workers, one with failover off and one with it on (same, any), and
// the ping-pong takes turns between the two pairs in blocks of
// foLatBlock round trips, so a load that comes and goes on the machine
// weighs on both alike. The figures are medians over the blocks, which
// leave out the blocks a preemption hit: ns/oneway is the failover
// pair's, off-ns/oneway the other pair's, on/off the median of the
// ratios of the two blocks of each turn.
func BenchmarkTagLatencyFailover(b *testing.B) {
	for _, mode := range []failover.Mode{failover.SameTransport, failover.AnyTransport} {
		b.Run(mode.String(), func(b *testing.B) { benchTagLatencyFailover(b, mode) })
	}
}

const (
	// foModeEnv tells the child of BenchmarkTagLatencyFailover the
	// failover mode of its second worker.
	foModeEnv   = "UCGO_UCP_BENCH_FAILOVER"
	tagFoAddr   = 0x7f0 // the address of rank 0's failover worker
	tagFoHello  = 0x7f1 // the child's first message from its failover worker
	tagFoSwitch = 0x7f2 // the child moves to its other worker
	// foLatBlock round trips make a block: short enough that most
	// blocks run between two preemptions on a loaded machine
	foLatBlock = 200
	// foWarm round trips start each block untimed: the pair's state
	// comes back into the caches after the other pair's block
	foWarm = 20
)

func init() {
	// pong2: pinned; a second worker with failover as foModeEnv says,
	// connected to rank 0's; echo every message back on the worker in
	// turn, move to the other on tagFoSwitch, until tagQuit.
	childRoles["pong2"] = func(nd *node) error {
		defer pinCPU(runtime.NumCPU() - 1)()
		buf := make([]byte, 64<<10)
		r := nd.w.TagRecv(buf, mkTag(0, tagFoAddr), exact, nil)
		spin(nd.w, r)
		if err := r.Err(); err != nil {
			return err
		}
		addr := append([]byte(nil), buf[:r.Info().Length]...)
		r.Release()
		mode, err := failover.ParseMode(os.Getenv(foModeEnv))
		if err != nil {
			return err
		}
		ctx, err := newContext(Config{ErrorMode: ErrorModePeer, SourceTagMask: srcMask, Failover: failover.Policy{Mode: mode}},
			func(string) string { return "" })
		if err != nil {
			return err
		}
		defer ctx.Close()
		w2, err := ctx.NewWorker()
		if err != nil {
			return err
		}
		defer w2.Close()
		ep, err := w2.Connect(addr, EPParams{})
		if err != nil {
			return err
		}
		s := ep.TagSend(nil, mkTag(nd.rank, tagFoHello), nil)
		spin(w2, s)
		if err := s.Err(); err != nil {
			return err
		}
		s.Release()
		ws := [2]*Worker{nd.w, w2}
		cur := 0
		for {
			w := ws[cur]
			r := w.TagRecv(buf, 0, 0, nil)
			spin(w, r)
			if err := r.Err(); err != nil {
				return err
			}
			info := r.Info()
			r.Release()
			switch uint32(info.Tag) {
			case tagQuit:
				return nil
			case tagFoSwitch:
				cur ^= 1
				continue
			}
			s := info.Sender.TagSend(buf[:info.Length], mkTag(nd.rank, uint32(info.Tag)), nil)
			spin(w, s)
			if err := s.Err(); err != nil {
				return err
			}
			s.Release()
		}
	}
}

func benchTagLatencyFailover(b *testing.B, mode failover.Mode) {
	nd := world(b, 2, "pong2", Config{ErrorMode: ErrorModePeer}, EnvErrMode+"="+ErrorModePeer.String(),
		EnvFailover+"=off", foModeEnv+"="+mode.String())
	ctx, err := newContext(Config{ErrorMode: ErrorModePeer, SourceTagMask: srcMask, Failover: failover.Policy{Mode: mode}},
		func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ctx.Close() })
	w2, err := ctx.NewWorker()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w2.Close() })
	wait := func(w *Worker, r *Request) {
		b.Helper()
		spin(w, r)
		if err := r.Err(); err != nil {
			b.Fatal(err)
		}
		r.Release()
	}
	wait(nd.w, nd.eps[1].TagSend(w2.Address(), mkTag(0, tagFoAddr), nil))
	hello := w2.TagRecv(nil, mkTag(1, tagFoHello), exact, nil)
	spin(w2, hello)
	if err := hello.Err(); err != nil {
		b.Fatal(err)
	}
	pairs := [2]struct {
		w  *Worker
		ep *Endpoint
	}{{nd.w, nd.eps[1]}, {w2, hello.Info().Sender}}
	hello.Release()

	defer pinCPU(0)()
	out, in := pattern(8, 1), make([]byte, 8)
	round := func(k int) { tagRoundTrip(b, pairs[k].w, pairs[k].ep, out, in) }
	// block runs n timed round trips on pair k and hands the child over
	// to the other pair
	block := func(k, n int) time.Duration {
		for i := 0; i < foWarm; i++ {
			round(k)
		}
		t0 := time.Now()
		for i := 0; i < n; i++ {
			round(k)
		}
		el := time.Since(t0)
		wait(pairs[k].w, pairs[k].ep.TagSend(nil, mkTag(0, tagFoSwitch), nil))
		return el
	}
	for i := 0; i < 4; i++ {
		block(i&1, 500)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var offs, ons, ratios []float64
	for done := 0; done < b.N; {
		n := min(foLatBlock, b.N-done)
		off := float64(block(0, n).Nanoseconds()) / float64(2*n)
		on := float64(block(1, n).Nanoseconds()) / float64(2*n)
		offs, ons, ratios = append(offs, off), append(ons, on), append(ratios, on/off)
		done += n
	}
	b.StopTimer()
	b.ReportMetric(median(ons), "ns/oneway")
	b.ReportMetric(median(offs), "off-ns/oneway")
	b.ReportMetric(median(ratios), "on/off")
	wait(pairs[0].w, pairs[0].ep.TagSend(nil, mkTag(0, tagQuit), nil))
	nd.exitOK(1)
}

// median returns the median of v (v is sorted in place).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}
