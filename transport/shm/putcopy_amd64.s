#include "textflag.h"

// func copyVec(dst, src []byte)
//
// 129 <= len(src) <= 256: the first and the last 128 bytes of src, loaded
// into Y0-Y7 before any store, so the two halves may overlap.
TEXT ·copyVec(SB), NOSPLIT, $0-48
	MOVQ	dst_base+0(FP), DI
	MOVQ	src_base+24(FP), SI
	MOVQ	src_len+32(FP), BX
	VMOVDQU	(SI), Y0
	VMOVDQU	32(SI), Y1
	VMOVDQU	64(SI), Y2
	VMOVDQU	96(SI), Y3
	VMOVDQU	-128(SI)(BX*1), Y4
	VMOVDQU	-96(SI)(BX*1), Y5
	VMOVDQU	-64(SI)(BX*1), Y6
	VMOVDQU	-32(SI)(BX*1), Y7
	VMOVDQU	Y0, (DI)
	VMOVDQU	Y1, 32(DI)
	VMOVDQU	Y2, 64(DI)
	VMOVDQU	Y3, 96(DI)
	VMOVDQU	Y4, -128(DI)(BX*1)
	VMOVDQU	Y5, -96(DI)(BX*1)
	VMOVDQU	Y6, -64(DI)(BX*1)
	VMOVDQU	Y7, -32(DI)(BX*1)
	VZEROUPPER
	RET
