// Package prefetch asks the CPU to start loading cache lines that the
// caller will read soon, without waiting for them.
//
// A goroutine that starts many flows in a row (New, Add, Execute, one
// after another) meets each pooled root, its kept flow and its spare frame
// cold: a round over thousands of flows has evicted them, or another
// core's loop wrote them last. Each plain load of such a line stalls the
// caller for the whole miss (100 ns or more), one miss after another,
// because each load's address comes from the line before it. A prefetch
// issued as soon as an address is known overlaps those misses with each
// other and with the caller's work in between, as Go's runtime does for
// the objects its garbage collector will scan next.
//
// The engine's loop meets the same chains in a round over many parked
// flows: it asks for the next ready flows' lines as it runs one
// (prefetchTurns), and for the step and flow that parked some places
// after the one a completion finishes (parked, External.Success).
//
// A prefetch is a hint: it never faults (a nil or stale address is
// harmless), never changes memory, and orders nothing, so it needs no
// synchronisation and cannot make a data race. On amd64 it is PREFETCHT0,
// on arm64 PRFM PLDL1KEEP, in the race build too (the race detector does
// not look into assembly, and the instruction reads nothing it tracks, so
// the race tests run the real instruction); elsewhere Lines does nothing.
package prefetch
