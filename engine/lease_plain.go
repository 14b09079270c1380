//go:build amd64 && !race

package engine

import "unsafe"

// setLease stores v into rt.lease (New and Release, one writer at a time:
// the root's holder or the loop). A plain store, inlined where the release-
// only store it replaces (internal/storerel's MOV) was an assembly call
// that spilled every live register: ~11 instructions each, 22 of Simple.
//
// Which order it needs: every reader of the word (Ref, Valid, Ref's
// Cancel, Batch, the released tests of a stale holder's calls) compares it
// and reads nothing the writer stored before it; what a reused root's next
// holder must see is ordered by the pool (its lock, or the loop's own
// list), not by the lease. The one order a reader does use is the store's
// with the run word's next change: Ref's Cancel takes a run word read
// between two equal lease reads as this lease's, so a later lease's run
// (its Execute's CompareAndSwap, after this store in program order) must
// not become visible first: amd64 keeps stores in order (TSO), and the
// compiler moves no store past a later atomic operation. Beyond that
// the store only has to be whole, never torn:
// an aligned 8-byte MOV on amd64, and the Go memory model's rule for
// word-sized locations (a racy read observes a value actually written).
// The word is atomic.Uint64's only field, at offset 0
// (TestLeaseWordLayout). Under the race detector the store is atomic
// (lease_atomic.go), so the detector sees the hand-off.
func (rt *root) setLease(v uint64) { *(*uint64)(unsafe.Pointer(&rt.lease)) = v }

// setRunEnded stores v into rt.run with release order, a plain store:
// endRunEmptied's end of a waited run, whose caller issues a locked
// instruction right after (see there). The word is atomic.Uint64's only
// field (TestLeaseWordLayout checks the run word too); an aligned 8-byte
// MOV is whole, and a concurrent CompareAndSwap (askCancel) sees the old
// value or this one, as with the XCHG.
func (rt *root) setRunEnded(v uint64) { *(*uint64)(unsafe.Pointer(&rt.run)) = v }
