package verbs

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time the calling thread has used.
func threadCPU(tb testing.TB) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

// benchTransferCPU times b.N RDMA WRITEs or READs of size bytes from a to
// b on lo at MTU 4096, window of them outstanding, with one thread running
// both engines in turn. Nothing spins idle, so the thread's CPU time per
// operation (cpu-ns/op) is the work both sides do for it, user and kernel
// (the loopback delivers in the sender's system call), and it hardly
// changes when other processes load the host, unlike the wall time.
func benchTransferCPU(b *testing.B, op WROpcode, size, window int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a, p := pair(b, rigOpts{bufSize: 2 * size, mtu: MTU4096, noWatchdog: true, sendWR: 2 * window, cqe: 4 * window})
	fill(a.buf[:size], 1)
	wr := SendWR{Opcode: op, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, size)},
		RemoteAddr: p.mr.Addr(), RKey: p.mr.RKey()}
	if op == WRRDMARead {
		wr.SG = []SGE{a.mr.SGE(size, size)}
	}
	wcs := make([]WC, 64)
	before, pBefore := a.d.Counters(), p.d.Counters()
	b.SetBytes(int64(size))
	b.ResetTimer()
	cpu0 := threadCPU(b)
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
		p.d.Progress()
		n := a.cq.Poll(wcs)
		for _, wc := range wcs[:n] {
			if wc.Status != WCSuccess {
				b.Fatalf("completion %+v", wc)
			}
		}
		inflight -= n
		done += n
	}
	cpu := threadCPU(b) - cpu0
	b.StopTimer()
	c, pc := a.d.Counters(), p.d.Counters()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(c.Retransmits-before.Retransmits+pc.Retransmits-pBefore.Retransmits)/float64(b.N), "restarts/op")
	b.ReportMetric(float64(c.Timeouts-before.Timeouts)/float64(b.N), "timeouts/op")
}

// BenchmarkTransferCPU: the CPU time of RDMA WRITEs and READs between two
// devices on lo, both engines on one thread, 16 operations outstanding.
func BenchmarkTransferCPU(b *testing.B) {
	for _, op := range []WROpcode{WRRDMAWrite, WRRDMARead} {
		for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("%v/%d", op, size), func(b *testing.B) { benchTransferCPU(b, op, size, 16) })
		}
	}
}
