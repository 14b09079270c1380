//go:build amd64 && !race

package storerel

import "sync/atomic"

// Uintptr stores v into *p with release order: the caller's reads and
// writes before the call are visible to a goroutine that loads v from *p
// (atomic Load or CompareAndSwap). A plain MOV on amd64; safe because
// atomic.Uintptr holds nothing but its word at offset 0 (TestLayout), and
// an aligned 8-byte MOV is atomic on amd64.
//
//go:noescape
func Uintptr(p *atomic.Uintptr, v uintptr)

// Uint64 is Uintptr for an atomic.Uint64 (its word at offset 0, 8-byte
// aligned by the type: TestLayout).
//
//go:noescape
func Uint64(p *atomic.Uint64, v uint64)

// Bool is Uintptr for an atomic.Bool: its uint32 at offset 0 (TestLayout)
// gets 1 or 0, as atomic.Bool.Store writes it.
//
//go:noescape
func Bool(p *atomic.Bool, v bool)
