package roce

// foldCopyAVX2 copies src (len(src) a multiple of 128, at least 128) to
// dst and returns raw(s, src), the raw CRC state after src from state s.
//
//go:noescape
func foldCopyAVX2(s uint32, dst, src []byte) uint32

// crcCopyUpdate copies src into dst (at least as long) and returns
// crc32.Update(c, crc32.IEEETable, src). Where the CPU has 256-bit
// carry-less multiplication it reads src once for both: the fold is
// bound by the multiplier, so the copy costs next to nothing beside it,
// where a copy and a separate CRC pass each read all of src.
func crcCopyUpdate(c uint32, dst, src []byte) uint32 {
	if !haveFold || len(src) < foldMin {
		copy(dst, src)
		return crcShort(c, src)
	}
	dst = dst[:len(src)]
	n := len(src) &^ 127
	if raceBuild {
		raceCopy(dst[:n], src[:n])
	}
	s := foldCopyAVX2(^c, dst[:n], src[:n])
	copy(dst[n:], src[n:])
	return crcShort(^s, src[n:])
}
