//go:build (amd64 || arm64) && !race

package prefetch

import "unsafe"

// Lines asks for the cache lines holding a, b, c and d (each may be nil):
// one call for the few lines a caller knows it will touch next. The
// pointers are only addresses to the CPU; the assembly reads nothing
// through them.
//
//go:noescape
func Lines(a, b, c, d unsafe.Pointer)
