package shm

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/testproc"
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

// TestPutCopyRaceSeen: the race detector sees putCopy's vector copy as a
// read of the source and a write of the destination, so a put racing
// with a store into its buffer is reported, as it is for copy. The race
// happens in a child, whose report is read from its stderr.
func TestPutCopyRaceSeen(t *testing.T) {
	if !raceBuild {
		t.Skip("needs the race detector (go test -race)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, testproc.Args...)
	cmd.Env = append(os.Environ(), testproc.RoleEnv+"="+putCopyRaceRole, "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("WARNING: DATA RACE")) || !bytes.Contains(out, []byte("putCopy")) {
		t.Fatalf("a vector put copy racing with a store into its source: exit %v, output:\n%s", err, out)
	}
}

// putCopyRaceRole copies 200 bytes with putCopy while another goroutine
// stores into the source.
const putCopyRaceRole = "putcopy-race"

func init() {
	testproc.Register(putCopyRaceRole, func() error {
		src, dst := make([]byte, 200), make([]byte, 200)
		done := make(chan struct{})
		go func() { src[100] = 1; close(done) }()
		putCopy(dst, src)
		<-done
		return nil
	})
}
