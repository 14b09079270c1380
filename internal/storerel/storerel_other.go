//go:build !amd64 || race

package storerel

import "sync/atomic"

// Uintptr stores v into *p with (at least) release order; see the package
// doc. Here it is the atomic Store.
func Uintptr(p *atomic.Uintptr, v uintptr) { p.Store(v) }

// Uint64 is Uintptr for an atomic.Uint64.
func Uint64(p *atomic.Uint64, v uint64) { p.Store(v) }

// Bool is Uintptr for an atomic.Bool.
func Bool(p *atomic.Bool, v bool) { p.Store(v) }
