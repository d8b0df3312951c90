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

// FOLD_128 folds the 128 bits in each of the eight 16-byte lanes of
// Y1-Y4 into X1: 128 bytes to 64 with crcK512 (Y1 onto Y3, Y2 onto Y4),
// then the four lanes of Y1 and Y2 to 16 bytes with crcK128, which it
// leaves in X0 for FOLD_FINISH. It clobbers Y0-Y6.
#define FOLD_128 \
	VBROADCASTI128 ·crcK512(SB), Y0; \
	VPCLMULQDQ $0x11, Y0, Y1, Y5; \
	VPCLMULQDQ $0x00, Y0, Y1, Y1; \
	VPCLMULQDQ $0x11, Y0, Y2, Y6; \
	VPCLMULQDQ $0x00, Y0, Y2, Y2; \
	VPXOR      Y5, Y1, Y1; \
	VPXOR      Y6, Y2, Y2; \
	VPXOR      Y3, Y1, Y1; \
	VPXOR      Y4, Y2, Y2; \
	VEXTRACTI128 $1, Y1, X3; \
	VEXTRACTI128 $1, Y2, X4; \
	VMOVDQU      ·crcK128(SB), X0; \
	VPCLMULQDQ   $0x11, X0, X1, X5; \
	VPCLMULQDQ   $0x00, X0, X1, X1; \
	VPXOR        X5, X1, X1; \
	VPXOR        X3, X1, X1; \
	VPCLMULQDQ   $0x11, X0, X1, X5; \
	VPCLMULQDQ   $0x00, X0, X1, X1; \
	VPXOR        X5, X1, X1; \
	VPXOR        X2, X1, X1; \
	VPCLMULQDQ   $0x11, X0, X1, X5; \
	VPCLMULQDQ   $0x00, X0, X1, X1; \
	VPXOR        X5, X1, X1; \
	VPXOR        X4, X1, X1
