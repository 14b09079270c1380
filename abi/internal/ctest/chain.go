package ctest

/*
#cgo CFLAGS: -I${SRCDIR}/../.. -std=gnu11 -Wall
#include <stdint.h>
int64_t ct_chain(unsigned n);
*/
import "C"

// Chain runs n C steps back to back in C (chain.c), in one crossing, each
// step two integers in and both + 1 out through a recording success; it
// returns the first value the last step succeeded with (n), or -1 if a
// step did not record exactly one success. The floor of the C step under
// a design that runs chains of C steps in C.
func Chain(n int) int64 { return int64(C.ct_chain(C.uint(n))) }
