#include "textflag.h"
#include "crcfold_amd64.h"

// Folding constants of the reflected CRC-32 (IEEE) for VPCLMULQDQ: per
// 128-bit lane, the low quadword multiplies the lane's low half and the
// high quadword its high half. k<d>: fold a lane forward by d bits,
// bit-reflected x^(d+32) mod P and x^(d-32) mod P, shifted left by one.
DATA ·crcK1024+0(SB)/8, $0x1e88ef372
DATA ·crcK1024+8(SB)/8, $0x14a7fe880
GLOBL ·crcK1024(SB), RODATA|NOPTR, $16
DATA ·crcK512+0(SB)/8, $0x154442bd4
DATA ·crcK512+8(SB)/8, $0x1c6e41596
GLOBL ·crcK512(SB), RODATA|NOPTR, $16
DATA ·crcK128+0(SB)/8, $0x1751997d0
DATA ·crcK128+8(SB)/8, $0x0ccaa009e
GLOBL ·crcK128(SB), RODATA|NOPTR, $16

// Final reduction (FOLD_FINISH): x^64 mod P shifted as above, and the
// polynomial P (low quadword) with mu = x^64 / P (high), bit-reflected.
DATA ·crcK64+0(SB)/8, $0x163cd6124
GLOBL ·crcK64(SB), RODATA|NOPTR, $8
DATA ·crcPoly+0(SB)/8, $0x1db710641
DATA ·crcPoly+8(SB)/8, $0x1f7011641
GLOBL ·crcPoly(SB), RODATA|NOPTR, $16

// func foldAVX2(s uint32, p []byte) uint32
// len(p) must be a multiple of 128, at least 128. It returns raw(s, p),
// the raw CRC state after p from state s.
TEXT ·foldAVX2(SB), NOSPLIT, $0-36
	MOVL s+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX

	VMOVDQU (SI), Y1
	VMOVDQU 32(SI), Y2
	VMOVDQU 64(SI), Y3
	VMOVDQU 96(SI), Y4
	VMOVD   AX, X5
	VPXOR   Y5, Y1, Y1
	ADDQ    $128, SI
	SUBQ    $128, CX

	VBROADCASTI128 ·crcK1024(SB), Y0

loop:
	CMPQ CX, $128
	JB   fold512
	VPCLMULQDQ $0x11, Y0, Y1, Y5
	VPCLMULQDQ $0x00, Y0, Y1, Y1
	VPCLMULQDQ $0x11, Y0, Y2, Y6
	VPCLMULQDQ $0x00, Y0, Y2, Y2
	VPCLMULQDQ $0x11, Y0, Y3, Y7
	VPCLMULQDQ $0x00, Y0, Y3, Y3
	VPCLMULQDQ $0x11, Y0, Y4, Y8
	VPCLMULQDQ $0x00, Y0, Y4, Y4
	VPXOR      (SI), Y5, Y5
	VPXOR      32(SI), Y6, Y6
	VPXOR      64(SI), Y7, Y7
	VPXOR      96(SI), Y8, Y8
	VPXOR      Y5, Y1, Y1
	VPXOR      Y6, Y2, Y2
	VPXOR      Y7, Y3, Y3
	VPXOR      Y8, Y4, Y4
	ADDQ       $128, SI
	SUBQ       $128, CX
	JMP        loop

fold512:
	FOLD_128
	FOLD_FINISH
	MOVL         AX, ret+32(FP)
	VZEROUPPER
	RET

// func cpuid(leaf, sub uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET
