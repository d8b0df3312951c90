#include "textflag.h"

// func prefetchW(p *byte)
//
// PREFETCHW (0F 0D /1, which the assembler does not name) with the
// address in AX: the line at p is fetched in the state for writing.
TEXT ·prefetchW(SB), NOSPLIT, $0-8
	MOVQ	p+0(FP), AX
	BYTE	$0x0F; BYTE $0x0D; BYTE $0x08
	RET
