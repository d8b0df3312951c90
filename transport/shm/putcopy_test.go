package shm

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// putCopy copies every length from 0 to 300 bytes (the vector path's 129
// to 256 and the lengths around it) at every offset of a cache line's
// first 33 bytes in source and destination, and writes nothing outside
// the destination's range.
func TestPutCopy(t *testing.T) {
	src := make([]byte, 400)
	for i := range src {
		src[i] = byte(i*7 + 1)
	}
	dst := make([]byte, 400)
	for n := 0; n <= 300; n++ {
		for _, so := range []int{0, 1, 31, 32, 33} {
			for _, do := range []int{0, 3, 32, 33} {
				for i := range dst {
					dst[i] = 0xee
				}
				putCopy(dst[do:do+n:do+n], src[so:so+n])
				if !bytes.Equal(dst[do:do+n], src[so:so+n]) {
					t.Fatalf("n %d src+%d dst+%d: copy differs", n, so, do)
				}
				for i, b := range dst {
					if (i < do || i >= do+n) && b != 0xee {
						t.Fatalf("n %d src+%d dst+%d: byte %d outside the destination written", n, so, do, i)
					}
				}
			}
		}
	}
}

// BenchmarkPutCopy: putCopy against copy, 64 to 256 bytes into mapped
// shared memory, the copy of a shm put (putCopy takes copy up to 128).
func BenchmarkPutCopy(b *testing.B) {
	mem, err := unix.Mmap(-1, 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Munmap(mem)
	for _, size := range []int{64, 128, 192, 256} {
		src := make([]byte, size)
		w := mem[:size:size]
		b.Run(sizeName(size)+"/copy", func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				copy(w, src)
			}
		})
		b.Run(sizeName(size)+"/putCopy", func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				putCopy(w, src)
			}
		})
	}
}
