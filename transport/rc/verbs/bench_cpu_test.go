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
	a, p := transferPair(b, size, window)
	cpu0 := threadCPU(b)
	transfer(b, a, p, op, size, window, func() { p.d.Progress() })
	cpu := threadCPU(b) - cpu0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
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
