package ucp

import (
	"strconv"
	"testing"
)

// BenchmarkTagStreamCPU: the CPU time per 8-byte message of perftest's
// tag_bw pattern between two workers of this process over shm, driven by
// one pinned goroutine: the sender sends a burst (eager, no request),
// the receiver keeps up to 16 receives posted and progresses until the
// burst is in, so messages meet posted receives and, when the burst is
// longer than the window, the unexpected queue. It counts both sides'
// work and none of the waiting.
func BenchmarkTagStreamCPU(b *testing.B) {
	for _, burst := range []int{16, 64} {
		b.Run(strconv.Itoa(burst), func(b *testing.B) { benchTagStreamCPU(b, burst) })
	}
}

func benchTagStreamCPU(b *testing.B, burst int) {
	ws, ep := shmPair(b, Config{})
	tx, rx := ws[0], ws[1]
	out := make([]byte, 8)
	in := make([]byte, 8)
	const window = 16
	posted := make([]*Request, 0, window)
	run := func(n int) {
		for i := 0; i < n; i += burst {
			k := min(burst, n-i)
			for j := 0; j < k; j++ {
				if s := ep.TagSend(out, 5, nil); s != nil {
					for !s.Done() {
						tx.Progress()
						rx.Progress()
					}
					if err := s.Err(); err != nil {
						b.Fatal(err)
					}
					s.Release()
				}
			}
			for j := 0; j < k; j++ {
				if len(posted) == window {
					r := posted[0]
					copy(posted, posted[1:])
					posted = posted[:window-1]
					for !r.Done() {
						rx.Progress()
					}
					if err := r.Err(); err != nil {
						b.Fatal(err)
					}
					r.Release()
				}
				posted = append(posted, rx.TagRecv(in, 5, exact, nil))
			}
			for _, r := range posted {
				for !r.Done() {
					rx.Progress()
				}
				if err := r.Err(); err != nil {
					b.Fatal(err)
				}
				r.Release()
			}
			posted = posted[:0]
		}
	}
	run(4 * burst) // connects back, warms the pools
	defer pinCPU(0)()
	b.ReportAllocs()
	b.ResetTimer()
	c0 := threadCPU()
	run(b.N)
	b.ReportMetric(float64(threadCPU()-c0)/float64(b.N), "cpu-ns/msg")
}
