//go:build amd64 || arm64

package prefetch

import "unsafe"

// Lines asks for the cache lines holding a, b, c and d (each may be nil):
// one call for the few lines a caller knows it will touch next. The
// pointers are only addresses to the CPU; the assembly reads nothing
// through them.
//
//go:noescape
func Lines(a, b, c, d unsafe.Pointer)

// hinting: Lines issues the CPU's prefetch instruction here.
const hinting = true
