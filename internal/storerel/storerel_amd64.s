//go:build amd64 && !race

#include "textflag.h"

// func Uintptr(p *atomic.Uintptr, v uintptr)
TEXT ·Uintptr(SB),NOSPLIT,$0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, 0(AX)
	RET

// func Uint64(p *atomic.Uint64, v uint64)
TEXT ·Uint64(SB),NOSPLIT,$0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, 0(AX)
	RET

// func Bool(p *atomic.Bool, v bool)
TEXT ·Bool(SB),NOSPLIT,$0-9
	MOVQ p+0(FP), AX
	MOVBLZX v+8(FP), BX
	MOVL BX, 0(AX)
	RET
