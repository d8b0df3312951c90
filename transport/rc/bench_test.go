package rc

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/uct"
	"github.com/ucgo/ucgo/uct/ucttest"
)

// pinSelf pins the calling goroutine's thread to CPU 0 (the child runs on
// the last CPU) and returns a function undoing it.
func pinSelf() func() {
	runtime.LockOSThread()
	var old, set unix.CPUSet
	unix.SchedGetaffinity(0, &old)
	set.Set(0)
	if runtime.NumCPU() > 1 {
		unix.SchedSetaffinity(0, &set)
	}
	return func() {
		unix.SchedSetaffinity(0, &old)
		runtime.UnlockOSThread()
	}
}

// BenchmarkAMLatency: 8-byte AM ping-pong between processes in two
// network namespaces joined by veth; ns/oneway is half the round trip.
// Both sides busy-poll their iface, as ucx_perftest does.
func BenchmarkAMLatency(b *testing.B) {
	p := startPeerRole(b, 5*time.Second, "pinned")
	defer pinSelf()()
	got := 0
	p.it.SetAMHandler(amEcho, func(any, []byte, uct.AMFlags) { got++ }, nil)
	// wait polls until the i-th echo is in, failing if the endpoint fails
	// (the child died) instead of spinning for ever.
	wait := func(i int) {
		for spins := 0; got <= i; spins++ {
			p.it.Progress()
			if spins&1023 == 1023 && p.ep.Err() != nil {
				b.Fatal(p.ep.Err())
			}
		}
	}
	send := func(i int) {
		for {
			err := p.ep.AMShort(amEcho, uint64(i), nil)
			if err == nil {
				return
			}
			if err != uct.ErrNoResource {
				b.Fatal(err)
			}
			p.it.Progress()
		}
	}
	// Warm up with the same busy loop: p.until yields, and a yield of
	// this goroutine, locked to its pinned thread, is a thread handoff.
	for i := 0; i < 1000; i++ {
		send(i)
		wait(i)
	}
	got = 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		send(i)
		wait(i)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/oneway")
	p.quit()
}

// BenchmarkPutBandwidth: 1 MiB RDMA WRITEs (PutZcopy) into the child's
// memory, up to 16 in flight.
func BenchmarkPutBandwidth(b *testing.B) {
	p := startPeerRole(b, 5*time.Second, "pinned")
	defer pinSelf()()
	iov := [][]byte{pattern(mib, 1)}
	before := p.md.dev.Counters()
	window(b, p, func(c *uct.Completion) error { return p.ep.PutZcopy(iov, p.memAddr, p.rkey, c) })
	c := p.md.dev.Counters()
	b.ReportMetric(float64(c.Retransmits-before.Retransmits)/float64(b.N), "retransmits/op")
	b.ReportMetric(float64(c.Timeouts-before.Timeouts)/float64(b.N), "timeouts/op")
	b.ReportMetric(float64(c.TxCalls-before.TxCalls)/float64(b.N), "sendmmsg/op")
	p.quit()
}

// BenchmarkGetBandwidth: 1 MiB RDMA READs (GetZcopy) from the child's
// memory, up to 16 in flight; it reports the READs re-requested for a
// missing response per operation.
func BenchmarkGetBandwidth(b *testing.B) {
	p := startPeerRole(b, 5*time.Second, "pinned")
	defer pinSelf()()
	iov := [][]byte{make([]byte, mib)}
	before := p.md.dev.Counters()
	window(b, p, func(c *uct.Completion) error { return p.ep.GetZcopy(iov, p.memAddr, p.rkey, c) })
	c := p.md.dev.Counters()
	b.ReportMetric(float64(c.ReadRetries-before.ReadRetries)/float64(b.N), "rereads/op")
	b.ReportMetric(float64(c.Timeouts-before.Timeouts)/float64(b.N), "timeouts/op")
	p.quit()
}

const mib = 1 << 20

// window times b.N operations of 1 MiB each, posted by post with up to 16
// in flight, retrying on uct.ErrNoResource after a Progress.
func window(b *testing.B, p *peer, post func(*uct.Completion) error) {
	inflight := 0
	comp := uct.Completion{Func: func(c *uct.Completion) {
		if c.Status != nil {
			b.Errorf("%v; counters %+v", c.Status, p.md.dev.Counters())
		}
		inflight--
		c.Count = 1
	}, Count: 1}
	comps := make([]uct.Completion, 16)
	for i := range comps {
		comps[i] = comp
	}
	b.SetBytes(mib)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for inflight == len(comps) {
			p.it.Progress()
		}
		for {
			err := post(&comps[i%len(comps)])
			if err == uct.ErrInProgress {
				inflight++
				break
			}
			if err != uct.ErrNoResource {
				b.Fatal(err)
			}
			p.it.Progress()
		}
	}
	for inflight > 0 {
		p.it.Progress()
	}
	b.StopTimer()
}

// BenchmarkLoopback runs the uct standard benchmarks between two devices
// on 127.0.0.1 in one process.
func BenchmarkLoopback(b *testing.B) {
	ucttest.Bench(b, loopPair)
}
