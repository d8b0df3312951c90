package shm

import (
	"testing"
)

// BenchmarkAMBcopyCPU: the CPU cost of one AMBcopy of 256 B and 4 KiB
// (8-byte header, the rest payload, as am_bw sends it) through the FIFO
// and its delivery, both by this thread: 32 messages, then Progress
// drains them. Like BenchmarkAMShortCPU it leaves out the cache line
// transfers of a two-process run and reports thread CPU time.
func BenchmarkAMBcopyCPU(b *testing.B) {
	for _, size := range []int{256, 4096} {
		b.Run(sizeName(size), func(b *testing.B) {
			src := make([]byte, size)
			b.SetBytes(int64(size))
			sendCPU(b, func(ep *Endpoint, _ int) error {
				_, err := ep.AMBcopy(amEcho, src[:8], src[8:])
				return err
			})
		})
	}
}
