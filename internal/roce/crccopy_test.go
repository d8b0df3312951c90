package roce

import (
	"bytes"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestCRCCopyUpdate checks crcCopyUpdate against copy and hash/crc32
// over lengths around every fold boundary, at every alignment of source
// and destination, from several states, and that it writes nothing
// beyond len(src).
func TestCRCCopyUpdate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 9000)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	out := make([]byte, 9100)
	lens := []int{0, 1, 15, 16, 127, 128, 129, 255, 256, 511, 512, 513, 640, 1023, 1024, 1025, 4095, 4096, 4097, 4100, 8192}
	for _, n := range lens {
		for off := 0; off < 17; off++ {
			for _, doff := range []int{0, 1, 7, 31, 33} {
				for _, c := range []uint32{0, 0xffffffff, r.Uint32()} {
					for i := range out {
						out[i] = 0xa5
					}
					p := buf[off : off+n]
					got := crcCopyUpdate(c, out[doff:], p)
					if want := crc32.Update(c, crc32.IEEETable, p); got != want {
						t.Fatalf("len %d offset %d state %#x: %#x, want %#x", n, off, c, got, want)
					}
					if !bytes.Equal(out[doff:doff+n], p) {
						t.Fatalf("len %d offset %d dst offset %d: copy differs", n, off, doff)
					}
					for i, b := range out {
						if (i < doff || i >= doff+n) && b != 0xa5 {
							t.Fatalf("len %d dst offset %d: byte %d outside the copy written", n, doff, i)
						}
					}
				}
			}
		}
	}
}

func FuzzCRCCopyUpdate(f *testing.F) {
	f.Add(uint32(0), make([]byte, 4096), uint8(0))
	f.Add(uint32(0xffffffff), []byte("RoCEv2"), uint8(3))
	f.Fuzz(func(t *testing.T, c uint32, p []byte, doff uint8) {
		out := make([]byte, int(doff)+len(p))
		if got, want := crcCopyUpdate(c, out[doff:], p), crc32.Update(c, crc32.IEEETable, p); got != want {
			t.Fatalf("len %d state %#x: %#x, want %#x", len(p), c, got, want)
		}
		if !bytes.Equal(out[doff:], p) {
			t.Fatalf("len %d: copy differs", len(p))
		}
	})
}

// BenchmarkCopyThenCRC4K and BenchmarkCRCCopy4K compare the receive
// path's two passes (copy the payload out, CRC it) with the one pass of
// crcCopyUpdate.
func BenchmarkCopyThenCRC4K(b *testing.B) {
	p, out := make([]byte, 4096), make([]byte, 4096)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		copy(out, p)
		crcUpdate(0, p)
	}
}

func BenchmarkCRCCopy4K(b *testing.B) {
	p, out := make([]byte, 4096), make([]byte, 4096)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		crcCopyUpdate(0, out, p)
	}
}
