package main

import (
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/bench/perftest/internal/report"
)

// BenchmarkPutBWLoopCPU: the CPU time of one iteration of put_bw's
// initiator loop with 8-byte and 256-byte puts over shm (putShortStream:
// the put and the meter's mark, what ucx_perftest's loop pays for
// uct_ep_put_short and ucx_perf_update), on this thread, both sides in
// this process.
func BenchmarkPutBWLoopCPU(b *testing.B) {
	for _, size := range []int{8, 256} {
		b.Run(strconv.Itoa(size), func(b *testing.B) { benchPutBWLoop(b, size) })
	}
}

func benchPutBWLoop(b *testing.B, size int) {
	cfg := &config{Test: "put_bw", Transport: "shm", Sizes: []int{size}, Iters: 10, Window: 16, ErrMode: "none", Wait: "poll", CPU: -1}
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
	ini.timer().start(report.NewRecorder(b.N), size, b.N)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := func() int64 {
		var ru unix.Rusage
		_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru)
		return ru.Utime.Nano() + ru.Stime.Nano()
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	c0 := cpu()
	if err := ini.putShortStream(size, b.N); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpu()-c0)/float64(b.N), "cpu-ns/op")
}
