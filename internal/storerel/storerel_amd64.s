//go:build amd64 && !race

#include "textflag.h"

// func Uintptr(p *atomic.Uintptr, v uintptr)
TEXT ·Uintptr(SB),NOSPLIT,$0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, 0(AX)
	RET
