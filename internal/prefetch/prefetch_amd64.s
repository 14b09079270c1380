//go:build amd64

#include "textflag.h"

// func Lines(a, b, c, d unsafe.Pointer)
// PREFETCHT0 never faults: a nil or unmapped address is dropped.
TEXT ·Lines(SB),NOSPLIT,$0-32
	MOVQ a+0(FP), AX
	PREFETCHT0 (AX)
	MOVQ b+8(FP), AX
	PREFETCHT0 (AX)
	MOVQ c+16(FP), AX
	PREFETCHT0 (AX)
	MOVQ d+24(FP), AX
	PREFETCHT0 (AX)
	RET
