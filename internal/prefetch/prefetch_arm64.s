//go:build arm64

#include "textflag.h"

// func Lines(a, b, c, d unsafe.Pointer)
// PRFM never faults: a nil or unmapped address is dropped.
TEXT ·Lines(SB),NOSPLIT,$0-32
	MOVD a+0(FP), R0
	PRFM (R0), PLDL1KEEP
	MOVD b+8(FP), R0
	PRFM (R0), PLDL1KEEP
	MOVD c+16(FP), R0
	PRFM (R0), PLDL1KEEP
	MOVD d+24(FP), R0
	PRFM (R0), PLDL1KEEP
	RET
