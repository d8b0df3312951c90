package roce

import (
	"hash/crc32"
	"testing"
)

// TestCRCShort checks crcShort against hash/crc32 for every length up
// to twice smallCRC, from several states.
func TestCRCShort(t *testing.T) {
	buf := make([]byte, 2*smallCRC)
	for i := range buf {
		buf[i] = byte(i*29 + 3)
	}
	for n := 0; n <= len(buf); n++ {
		for _, c := range []uint32{0, 0xffffffff, 0x1badb002} {
			if got, want := crcShort(c, buf[:n]), crc32.Update(c, crc32.IEEETable, buf[:n]); got != want {
				t.Fatalf("len %d state %#x: %#x, want %#x", n, c, got, want)
			}
		}
	}
}
