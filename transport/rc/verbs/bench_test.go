package verbs

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// benchTransfer times b.N RDMA WRITEs or READs of size bytes from a to b
// on lo at MTU 4096, window of them outstanding. The peer's engine runs
// on a goroutine of its own (locked to its thread), busy-polling as a
// ucx_perftest peer does, so that a CPU profile shows both sides.
func benchTransfer(b *testing.B, op WROpcode, size, window int) {
	a, p := transferPair(b, size, window)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		for !stop.Load() {
			p.d.Progress()
		}
	}()
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	transfer(b, a, p, op, size, window, nil)
}

// transferPair connects the two ends of a transfer benchmark of
// operations of size bytes, window outstanding, and fills a's source.
func transferPair(b *testing.B, size, window int) (a, p *end) {
	a, p = pair(b, rigOpts{bufSize: 2 * size, mtu: MTU4096, noWatchdog: true, sendWR: 2 * window, cqe: 4 * window})
	fill(a.buf[:size], 1)
	return a, p
}

// transfer is the timed loop of the transfer benchmarks: it posts b.N
// RDMA WRITEs or READs of size bytes from a to p, window outstanding,
// and polls a's CQ until every one has completed successfully, calling
// between (if not nil) before each poll. It reports the go-back-N
// restarts, ACK timeouts and packets per operation: a transfer that
// loses packets shows there, not only in the time.
func transfer(b *testing.B, a, p *end, op WROpcode, size, window int, between func()) {
	wr := SendWR{Opcode: op, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, size)},
		RemoteAddr: p.mr.Addr(), RKey: p.mr.RKey()}
	if op == WRRDMARead {
		wr.SG = []SGE{a.mr.SGE(size, size)}
	}
	wcs := make([]WC, 64)
	before, pBefore := a.d.Counters(), p.d.Counters()
	b.SetBytes(int64(size))
	b.ResetTimer()
	inflight, done := 0, 0
	for posted := 0; posted < b.N || done < b.N; {
		if posted < b.N && inflight < window {
			wr.ID = uint64(posted)
			if _, err := a.qp.PostSend(wr); err != nil {
				b.Fatal(err)
			}
			posted++
			inflight++
			continue
		}
		if between != nil {
			between()
		}
		n := a.cq.Poll(wcs)
		for _, wc := range wcs[:n] {
			if wc.Status != WCSuccess {
				b.Fatalf("completion %+v", wc)
			}
		}
		inflight -= n
		done += n
	}
	b.StopTimer()
	c, pc := a.d.Counters(), p.d.Counters()
	b.ReportMetric(float64(c.Retransmits-before.Retransmits+pc.Retransmits-pBefore.Retransmits)/float64(b.N), "restarts/op")
	b.ReportMetric(float64(c.Timeouts-before.Timeouts)/float64(b.N), "timeouts/op")
	b.ReportMetric(float64(c.TxPackets-before.TxPackets+pc.TxPackets-pBefore.TxPackets)/float64(b.N), "pkts/op")
}

// BenchmarkTransfer: RDMA WRITE and READ bandwidth between two devices on
// lo, 16 operations outstanding.
func BenchmarkTransfer(b *testing.B) {
	for _, op := range []WROpcode{WRRDMAWrite, WRRDMARead} {
		for _, size := range []int{64 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("%v/%d", op, size), func(b *testing.B) { benchTransfer(b, op, size, 16) })
		}
	}
}
