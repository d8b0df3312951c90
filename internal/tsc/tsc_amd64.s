#include "textflag.h"

// func rdtsc() Ticks
TEXT ·rdtsc(SB), NOSPLIT, $0-8
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET

// func now() Ticks
//
// now is Now in one call: RDTSC where the counter is invariant, else a
// tail jump to monotonic, which has the same frame.
TEXT ·now(SB), NOSPLIT, $0-8
	CMPB ·useTSC(SB), $0
	JEQ  slow
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET
slow:
	JMP ·monotonic(SB)
