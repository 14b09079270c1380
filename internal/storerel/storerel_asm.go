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
