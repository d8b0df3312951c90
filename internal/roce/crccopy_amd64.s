#include "textflag.h"
#include "crcfold_amd64.h"

// The folding constants crcK1024, crcK512 and crcK128 are defined in
// crcfold_amd64.s.

// func foldCopyAVX2(s uint32, dst, src []byte) uint32
// len(src) must be a multiple of 128, at least 128, and dst at least as
// long. It copies src to dst and returns raw(s, src), as foldAVX2 does:
// each 128-byte block is loaded once, stored to dst and folded.
// The multiplier bounds the loop (two VPCLMULQDQ per 32 bytes), so the
// loads and stores of the copy ride along.
TEXT ·foldCopyAVX2(SB), NOSPLIT, $0-60
	MOVL s+0(FP), AX
	MOVQ dst_base+8(FP), DI
	MOVQ src_base+32(FP), SI
	MOVQ src_len+40(FP), CX

	VMOVDQU (SI), Y1
	VMOVDQU 32(SI), Y2
	VMOVDQU 64(SI), Y3
	VMOVDQU 96(SI), Y4
	VMOVDQU Y1, (DI)
	VMOVDQU Y2, 32(DI)
	VMOVDQU Y3, 64(DI)
	VMOVDQU Y4, 96(DI)
	VMOVD   AX, X5
	VPXOR   Y5, Y1, Y1
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $128, CX

	VBROADCASTI128 ·crcK1024(SB), Y0

loop:
	CMPQ CX, $128
	JB   fold512
	VMOVDQU    (SI), Y9
	VMOVDQU    32(SI), Y10
	VMOVDQU    64(SI), Y11
	VMOVDQU    96(SI), Y12
	VPCLMULQDQ $0x11, Y0, Y1, Y5
	VPCLMULQDQ $0x00, Y0, Y1, Y1
	VPCLMULQDQ $0x11, Y0, Y2, Y6
	VPCLMULQDQ $0x00, Y0, Y2, Y2
	VPCLMULQDQ $0x11, Y0, Y3, Y7
	VPCLMULQDQ $0x00, Y0, Y3, Y3
	VPCLMULQDQ $0x11, Y0, Y4, Y8
	VPCLMULQDQ $0x00, Y0, Y4, Y4
	VMOVDQU    Y9, (DI)
	VMOVDQU    Y10, 32(DI)
	VMOVDQU    Y11, 64(DI)
	VMOVDQU    Y12, 96(DI)
	VPXOR      Y9, Y5, Y5
	VPXOR      Y10, Y6, Y6
	VPXOR      Y11, Y7, Y7
	VPXOR      Y12, Y8, Y8
	VPXOR      Y5, Y1, Y1
	VPXOR      Y6, Y2, Y2
	VPXOR      Y7, Y3, Y3
	VPXOR      Y8, Y4, Y4
	ADDQ       $128, SI
	ADDQ       $128, DI
	SUBQ       $128, CX
	JMP        loop

fold512:
	FOLD_128
	FOLD_FINISH
	MOVL         AX, ret+56(FP)
	VZEROUPPER
	RET
