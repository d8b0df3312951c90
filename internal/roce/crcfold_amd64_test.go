package roce

import (
	"hash/crc32"
	"testing"
)

// TestFoldAVX2 checks the folding routines themselves, on CPUs that
// have them: they return the raw CRC of their input.
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
			want := ^crc32.Update(^s, crc32.IEEETable, p[:n])
			if got := foldAVX2(s, p[:n]); got != want {
				t.Fatalf("%d bytes from state %#x: folded CRC %#x, want %#x", n, s, got, want)
			}
			if got := foldCopyAVX2(s, make([]byte, n), p[:n]); got != want {
				t.Fatalf("%d bytes from state %#x: folded and copied CRC %#x, want %#x", n, s, got, want)
			}
		}
	}
}
