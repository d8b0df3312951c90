package shm

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/uct"
)

// pinSelf pins the calling goroutine's thread to CPU 0 (the child runs on
// the last CPU) and returns a function undoing it.
func pinSelf(b *testing.B) func() {
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

func benchSetup(b *testing.B) (uct.MD, uct.Iface, *child, uct.Endpoint) {
	md, it := openIface(b)
	it.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil) // children exit at cleanup
	c := startChild(b, "pinned")
	ep := c.connect(b, it)
	b.Cleanup(func() { ep.AMShort(amQuit, 0, nil) })
	return md, it, c, ep
}

func BenchmarkAMLatency(b *testing.B) {
	_, it, _, ep := benchSetup(b)
	defer pinSelf(b)()
	got := 0
	it.SetAMHandler(amEcho, func(any, []byte, uct.AMFlags) { got++ }, nil)
	// warm up
	for i := 0; i < 1000; i++ {
		for ep.AMShort(amEcho, uint64(i), nil) != nil {
		}
		for got <= i {
			it.Progress()
		}
	}
	got = 0
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for ep.AMShort(amEcho, uint64(i), nil) != nil {
			it.Progress()
		}
		for got <= i {
			it.Progress()
		}
	}
	el := time.Since(start)
	b.ReportMetric(float64(el.Nanoseconds())/float64(2*b.N), "ns/oneway")
}

func BenchmarkAMRate(b *testing.B) {
	_, it, _, ep := benchSetup(b)
	defer pinSelf(b)()
	got := 0
	it.SetAMHandler(amEcho, func(any, []byte, uct.AMFlags) { got++ }, nil)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		h := uint64(i)
		if i == b.N-1 {
			h |= 1 << 63
		}
		for ep.AMShort(amCount, h, nil) != nil {
			it.Progress()
		}
	}
	for got == 0 {
		it.Progress()
	}
	el := time.Since(start)
	b.ReportMetric(float64(b.N)/el.Seconds(), "msg/s")
}

func BenchmarkPutBandwidth(b *testing.B) {
	for _, kind := range []string{"alloc", "register"} {
		b.Run(kind, func(b *testing.B) {
			md, _, c, ep := benchSetup(b)
			key, addr := c.rkey, c.memAddr
			if kind == "register" {
				key, addr = c.rkeyR, c.regAddr
			}
			rk, err := md.UnpackRKey(key)
			if err != nil {
				b.Fatal(err)
			}
			defer rk.Close()
			src := make([]byte, 1<<20)
			for i := range src {
				src[i] = byte(i)
			}
			iov := [][]byte{src}
			if err := ep.PutZcopy(iov, addr, rk, nil); err != nil {
				b.Fatal(err)
			}
			defer pinSelf(b)()
			b.SetBytes(1 << 20)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := ep.PutZcopy(iov, addr, rk, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
