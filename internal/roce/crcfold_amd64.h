// Shared by crcfold_amd64.s and crccopy_amd64.s.

// FOLD_FINISH reduces the 128 folded bits in X1 (with crcK128 in X0)
// to their raw CRC from state 0, in AX, as hash/crc32's CLMUL code
// does: 128 bits to 96 with the high quadword of crcK128, 96 to 64 with
// crcK64, then a Barrett reduction by the polynomial with its quotient
// mu (crcPoly). It clobbers X0-X3.
#define FOLD_FINISH \
	VPCLMULQDQ $0x10, X0, X1, X2; \
	VPSRLDQ    $8, X1, X1; \
	VPXOR      X2, X1, X1; \
	VPCMPEQB   X3, X3, X3; \
	VPSRLQ     $32, X3, X3; \
	VPSRLDQ    $4, X1, X2; \
	VPAND      X3, X1, X1; \
	VMOVQ      ·crcK64(SB), X0; \
	VPCLMULQDQ $0x00, X0, X1, X1; \
	VPXOR      X2, X1, X1; \
	VMOVDQU    ·crcPoly(SB), X0; \
	VMOVDQA    X1, X2; \
	VPAND      X3, X1, X1; \
	VPCLMULQDQ $0x10, X0, X1, X1; \
	VPAND      X3, X1, X1; \
	VPCLMULQDQ $0x00, X0, X1, X1; \
	VPXOR      X2, X1, X1; \
	VPEXTRD    $1, X1, AX
