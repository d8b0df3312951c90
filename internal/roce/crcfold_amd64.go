package roce

import "golang.org/x/sys/cpu"

// foldAVX2 returns raw(s, p), the raw CRC state after p (len(p) a
// multiple of 128, at least 128) from state s.
//
//go:noescape
func foldAVX2(s uint32, p []byte) uint32

func cpuid(leaf, sub uint32) (a, b, c, d uint32)

// haveFold: 256-bit VPCLMULQDQ (CPUID leaf 7, ECX bit 10) with AVX2 and
// the OS saving YMM state.
var haveFold = func() bool {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasPCLMULQDQ {
		return false
	}
	_, _, c, _ := cpuid(7, 0)
	return c&(1<<10) != 0
}()

// foldMin is the shortest input crcUpdate folds with VPCLMULQDQ; below it
// hash/crc32 is as fast.
const foldMin = 512

// crcUpdate is crc32.Update(c, crc32.IEEETable, p). Where the CPU has
// 256-bit carry-less multiplication it folds eight 16-byte lanes per
// step, twice the lanes hash/crc32 keeps without AVX-512.
func crcUpdate(c uint32, p []byte) uint32 {
	if !haveFold || len(p) < foldMin {
		return crcShort(c, p)
	}
	n := len(p) &^ 127
	s := foldAVX2(^c, p[:n])
	return crcShort(^s, p[n:])
}
