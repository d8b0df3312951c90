package shm

import (
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// BenchmarkAMBcopyCPU: the CPU cost of one AMBcopy of 256 B and 4 KiB
// (8-byte header, the rest payload, as am_bw sends it) through the FIFO
// and its delivery, both by this thread: 32 messages, then Progress
// drains them. Like BenchmarkAMShortCPU it leaves out the cache line
// transfers of a two-process run and reports thread CPU time.
func BenchmarkAMBcopyCPU(b *testing.B) {
	for _, size := range []int{256, 4096} {
		b.Run(sizeName(size), func(b *testing.B) {
			_, rx := openIface(b)
			_, tx := openIface(b)
			got := 0
			rx.SetAMHandler(amEcho, func(any, []byte, uct.AMFlags) { got++ }, nil)
			epi, err := tx.Connect(rx.Address(), uct.EPParams{})
			if err != nil {
				b.Fatal(err)
			}
			defer epi.Close()
			src := make([]byte, size)
			const batch = 32
			run := func(n int) {
				for i := 0; i < n; i += batch {
					k := min(batch, n-i)
					for j := 0; j < k; j++ {
						if _, err := epi.AMBcopy(amEcho, src[:8], src[8:]); err != nil {
							b.Fatal(err)
						}
					}
					for want := got + k; got < want; {
						rx.Progress()
					}
				}
			}
			run(1000)
			defer pinSelf(b)()
			b.SetBytes(int64(size))
			b.ResetTimer()
			c0 := threadCPU()
			run(b.N)
			b.ReportMetric(float64(threadCPU()-c0)/float64(b.N), "cpu-ns/msg")
		})
	}
}
