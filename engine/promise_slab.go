package engine

import "sync/atomic"

// promiseSlabN is how many Promises one allocation makes (promiseSlab).
// A Promise is never reused: each slot of a slab is handed out once, and
// the slab goes back to the GC when nothing points into it any more. So a
// Promise (or the *Args its Wait returned) that a holder keeps, keeps its
// whole slab reachable: 2,048 bytes (14 x 144 and the count: the runtime's
// 2,048-byte size class, filled to 2,024), against 144 for a Promise of
// its own, and the values of the slab's other results, until the holder
// drops it. The reactor's own reference (engine.promises) lasts until
// its next trim tick (trimTick, armed by a Promise's end, success or
// failure: within about trimEvery), so an idle reactor does not keep the
// results of dropped Promises reachable. 14 makes the malloc of a Promise (about 250
// instructions and its heap bits, per flow, before) a fourteenth of one,
// adds 2.3 bytes a flow (the count, the class's rounding) to the GC's
// share, and keeps what one kept Promise can pin at 2 KB; the runtime's
// tiny allocator makes the same trade for small pointer-free objects.
// profiles/notes/2026-11-27-promise2-round9.md has the measurements.
const promiseSlabN = 14

// promiseSlab is promiseSlabN Promises made by one allocation; next counts
// the slots claimed (it runs past promiseSlabN when callers race for the
// last slots: those that find it full replace the slab).
type promiseSlab struct {
	next atomic.Uint32
	p    [promiseSlabN]Promise
}

// promiseSlabs is a reactor's current slab (engine.promises), on a cache
// line of its own: callers on other goroutines load it while the loop
// writes the engine's fields beside it.
type promiseSlabs struct {
	_   [64]byte
	cur atomic.Pointer[promiseSlab]
	_   [56]byte
}

// newPromise returns a zero Promise from e's current slab, claimed without
// a lock from any goroutine: one atomic add, and an allocation for every
// promiseSlabN Promises. A slot is handed out once (the add gives each
// caller its own index), so a kept Promise is never another flow's.
func (e *engine) newPromise() *Promise {
	s := e.promises.cur.Load()
	if s != nil {
		if i := s.next.Add(1) - 1; i < promiseSlabN {
			return &s.p[i]
		}
	}
	return e.newPromiseSlab(s)
}

// newPromiseSlab makes a slab when old (e's slab as newPromise saw it, or
// nil) is used up, takes its first slot and installs it for the next
// callers. A caller that loses the race to install keeps its slab for the
// one Promise it returns (the rest is garbage with it): a rare loss of
// memory, never a Promise handed out twice.
//
//go:noinline
func (e *engine) newPromiseSlab(old *promiseSlab) *Promise {
	s := new(promiseSlab)
	s.next.Store(1)
	e.promises.cur.CompareAndSwap(old, s)
	return &s.p[0]
}

// newPromise's counterpart for the holder of e's loop word is written
// out in startPromiseNow (Promise's direct start, which runs on the
// caller as the loop; a function was ~20 instructions, over the inlining
// budget): a zero Promise from e.loopSlab, claimed with a plain count
// (loopFree) instead of newPromise's atomic add on a line every claimer
// writes (a locked instruction, ~20 cycles, a FanOut or Call flow). Only
// the word's holder claims from loopSlab, one at a time, and a slot is
// handed out once, as newPromise's; the trim tick lets go of the slab as
// of promises' (trimTick).

// newLoopSlab makes e.loopSlab when it is used up (or let go) and takes
// its first slot (startPromiseNow).
//
//go:noinline
func (e *engine) newLoopSlab() *Promise {
	s := new(promiseSlab)
	e.loopSlab, e.loopFree = s, promiseSlabN-1
	return &s.p[0]
}
