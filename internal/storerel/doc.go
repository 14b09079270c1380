// Package storerel gives up a lock word with a release-only store.
//
// A goroutine that takes a lock word with a CompareAndSwap must give it back
// with a store that keeps its earlier reads and writes before it (release
// order). Go's atomic Store is sequentially consistent: on amd64 it is an
// XCHG, a locked instruction as dear as the CompareAndSwap itself (about 20
// cycles). On amd64 every plain MOV store already has release order (TSO:
// stores are not reordered with earlier loads or stores), which is how the
// Go runtime's own StoreRel and Linux's spin_unlock are written; Uintptr is
// that MOV, as an assembly function so that the compiler, which cannot see
// into it, keeps every memory access of the critical section on its side of
// the call.
//
// What it does not give: a store followed by a load of another word is not
// ordered (store-load reordering), so Uintptr must not be used where a
// later load must see other goroutines' stores made before they saw this
// one (Dekker-style hand-offs). Giving up a lock word has no such load.
//
// Under the race detector, and on other architectures, Uintptr is the
// atomic Store: the detector sees the hand-off only through sync/atomic,
// and arm64's atomic Store is already the release-only STLR.
package storerel
