package roce

import (
	"hash/crc32"
	"testing"
)

// TestFoldAVX2 checks the folding routine itself, on CPUs that have it:
// the raw CRC of its 16 bytes equals the raw CRC of its input.
func TestFoldAVX2(t *testing.T) {
	if !haveFold {
		t.Skip("this CPU has no 256-bit VPCLMULQDQ: crcUpdate uses hash/crc32")
	}
	p := make([]byte, 4096)
	for i := range p {
		p[i] = byte(i*7 + i>>8)
	}
	for _, n := range []int{128, 256, 384, 4096} {
		for _, s := range []uint32{0, 1, 0xffffffff, 0x12345678} {
			var out [16]byte
			foldAVX2(s, p[:n], &out)
			want := ^crc32.Update(^s, crc32.IEEETable, p[:n])
			if got := rawUpdate(0, out[:]); got != want {
				t.Fatalf("%d bytes from state %#x: folded CRC %#x, want %#x", n, s, got, want)
			}
		}
	}
}
