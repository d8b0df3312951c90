package roce

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestCRCUpdate checks crcUpdate against hash/crc32 over lengths around
// every fold boundary, at every alignment, from several states.
func TestCRCUpdate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 9000)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	lens := []int{0, 1, 15, 16, 63, 64, 127, 128, 129, 255, 256, 511, 512, 513, 640, 1023, 1024, 1025, 4095, 4096, 4097, 4100, 8192}
	for _, n := range lens {
		for off := 0; off < 17; off++ {
			for _, c := range []uint32{0, 0xffffffff, r.Uint32()} {
				p := buf[off : off+n]
				if got, want := crcUpdate(c, p), crc32.Update(c, crc32.IEEETable, p); got != want {
					t.Fatalf("len %d offset %d state %#x: %#x, want %#x", n, off, c, got, want)
				}
			}
		}
	}
}

func FuzzCRCUpdate(f *testing.F) {
	f.Add(uint32(0), make([]byte, 4096))
	f.Add(uint32(0xffffffff), []byte("RoCEv2"))
	f.Fuzz(func(t *testing.T, c uint32, p []byte) {
		if got, want := crcUpdate(c, p), crc32.Update(c, crc32.IEEETable, p); got != want {
			t.Fatalf("len %d state %#x: %#x, want %#x", len(p), c, got, want)
		}
	})
}

func BenchmarkCRCUpdate4K(b *testing.B) {
	p := make([]byte, 4096)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		crcUpdate(0, p)
	}
}

func BenchmarkCRC32Update4K(b *testing.B) {
	p := make([]byte, 4096)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		crc32.Update(0, crc32.IEEETable, p)
	}
}
