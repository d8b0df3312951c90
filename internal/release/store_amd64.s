#include "textflag.h"

// func Store(p *uint64, v uint64)
TEXT ·Store(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET
