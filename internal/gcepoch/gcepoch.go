// Package gcepoch counts garbage collections, so that the project's pools
// can give memory back the way sync.Pool does: what a pool kept unused for
// a whole GC cycle is dropped at the next one.
//
// # Threads
//
// Epoch is safe from any goroutine; it is one atomic load.
//
// # Lifetimes
//
// A sentinel object with a cleanup is made at init; each cleanup, which the
// runtime runs after a GC found the sentinel unreachable, bumps the epoch
// and makes the next sentinel. The chain lives as long as the process.
//
// # Invariants
//
//   - The epoch only grows, by one per GC that collected the sentinel
//     (every cycle in practice; the runtime runs a GC at least every two
//     minutes).
package gcepoch

import (
	"runtime"
	"sync/atomic"
)

var epoch atomic.Uint64

// Epoch returns the number of GC cycles seen so far.
func Epoch() uint64 { return epoch.Load() }

type sentinel struct{ _ [16]byte } // not tiny-allocated: collected on its own

func arm() {
	s := &sentinel{}
	runtime.AddCleanup(s, func(struct{}) {
		epoch.Add(1)
		arm()
	}, struct{}{})
}

func init() { arm() }
