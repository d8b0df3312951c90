package main

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/bench/perftest/internal/report"
)

// BenchmarkPutBWLoopCPU: the CPU time of one iteration of put_bw's
// initiator loop with 8-byte puts over shm (putShortStream: the put and
// the meter's mark,
// what ucx_perftest's loop pays for uct_ep_put_short and
// ucx_perf_update), on this thread, both sides in this process.
func BenchmarkPutBWLoopCPU(b *testing.B) {
	cfg := &config{Test: "put_bw", Transport: "shm", Sizes: []int{8}, Iters: 10, Window: 16, ErrMode: "none", Wait: "poll", CPU: -1}
	td, err := checkRunnable(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ini, err := newSession(cfg, td, true)
	if err != nil {
		b.Fatal(err)
	}
	defer ini.Close()
	rsp, err := newSession(cfg, td, false)
	if err != nil {
		b.Fatal(err)
	}
	defer rsp.Close()
	if err := ini.connect(rsp.setup()); err != nil {
		b.Fatal(err)
	}
	if err := rsp.connect(ini.setup()); err != nil {
		b.Fatal(err)
	}
	ini.timer().calibrate()
	ini.timer().start(report.NewRecorder(b.N), 8, b.N)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := func() int64 {
		var ru unix.Rusage
		_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru)
		return ru.Utime.Nano() + ru.Stime.Nano()
	}
	b.ResetTimer()
	c0 := cpu()
	if err := ini.putShortStream(8, b.N); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpu()-c0)/float64(b.N), "cpu-ns/op")
}
