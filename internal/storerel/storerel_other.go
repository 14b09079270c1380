//go:build !amd64 || race

package storerel

import "sync/atomic"

// Uintptr stores v into *p with (at least) release order; see the package
// doc. Here it is the atomic Store.
func Uintptr(p *atomic.Uintptr, v uintptr) { p.Store(v) }
