package shm

import (
	"testing"
)

// BenchmarkPutShort: puts of 8 B to 4 KiB into the child's allocated
// memory, the operation ucx_perftest's put_bw posts (one-sided: the
// figure is the initiator's cost per put).
func BenchmarkPutShort(b *testing.B) {
	for _, size := range []int{8, 256, 4096} {
		b.Run(sizeName(size), func(b *testing.B) {
			md, _, c, ep := benchSetup(b)
			rk, err := md.UnpackRKey(c.rkey)
			if err != nil {
				b.Fatal(err)
			}
			defer rk.Close()
			src := make([]byte, size)
			if err := ep.PutShort(src, c.memAddr, rk); err != nil {
				b.Fatal(err)
			}
			defer pinSelf(b)()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := ep.PutShort(src, c.memAddr, rk); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<10:
		return itoa(n>>10) + "KiB"
	default:
		return itoa(n) + "B"
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// BenchmarkProgressIdle: one Progress of an iface with nothing received,
// the step a waiting receiver repeats.
func BenchmarkProgressIdle(b *testing.B) {
	_, it := openIface(b)
	defer pinSelf(b)()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it.Progress()
	}
}
