#include "textflag.h"

// func storeRelaxed(p *uint64, v uint64)
TEXT ·storeRelaxed(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET
