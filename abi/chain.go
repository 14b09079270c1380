package abi

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
)

// Chains. A C step whose callback only added C steps (the common shape of
// C code: a step that lays out the next ones) does not return to Go to
// have them run one crossing each: asx_chain (bridge.c) runs them in C,
// back to back, the values one succeeds with handed to the next as they
// are, on images of a ring (one image per step, stale once its step ended,
// as a released image is). The chain goes on while each step ends plainly:
// success with values that need no conversion and no cleanup (no owned
// value, no descriptor made in Go), or nothing at all (implicit success),
// and no stack() memory.
//
// The engine sees what it would have seen (engine/chain.go): the chain
// runs inside the adding step's callback, so nothing else of the engine
// runs meanwhile, as nothing else runs between steps that succeed plainly
// within a turn. Its steps are taken from the flow's turn budget
// (ChainBudget, ChainRan), so a chain yields where the engine would. Where
// it stops the engine gets the rest (enter):
//
//   - every step ran plainly: the adding step succeeds with the last
//     step's values, which is how its sub-steps would have ended it;
//   - a step ended otherwise (an error, a wait, a timeout, sub-steps, a
//     misuse, owned values, stack memory), or the budget ran out: the
//     remaining adds become engine steps, the first of them (that step)
//     on its own image, and the engine enters it as running with the
//     previous step's values (EnterSub); what its callback recorded is then
//     applied as for any C step (finish);
//   - a step's callback calls into Go (parallel, loop, stateVariable, a
//     wait's arming, any entry that is not record-only): the same, at that
//     moment (leave_chain in bridge.c, asxGoChainEnter), so the call is
//     served on that step, running in the engine, and the chain ends when
//     its callback returns.
//
// Error handlers of chained steps need nothing: a step that fails is
// entered and fails in the engine, which runs its handler.

// chainable reports whether b's record, once its callback returned, lets
// asx_chain run its adds: adds of C steps only, none given to the engine
// yet (nothing called Go in between), not an error handler, and no chain
// running on this loop already.
func chainable(b *C.asx_bsi, p *pool) bool {
	return b.rec == C.ASX_R_ADD && b.nadd > 0 && b.nadd == b.added && b.handler == 0 && !p.chaining && !chainsOff
}

// chainsOff turns chains off, for tests that compare a flow with and
// without them (set only while no flow runs).
var chainsOff bool

// runChain is runC's end for a chainable record: it runs the chain of as's
// adds (b's record), at most max steps, and hands the engine the rest. n
// is how many arguments as's callback got, prev what p.record returned.
func runChain(as *engine.Steps, b *C.asx_bsi, p *pool, prev *C.asx_bsi, n, max int) {
	// As finish does before apply: the callback's arguments are done with.
	b.mode = C.ASX_IDLE
	if n > 0 || p.pinned || len(p.handles) > 0 {
		if n > 0 && engine.X.OwnsArgs(as) {
			takenOver(as, b, n)
		}
		clearArgs(b, n, p)
	}
	r := p.chainRing(as)
	p.chaining, p.chainAs, p.chainB, p.chainPrev = true, as, b, prev
	if max > int(b.nadd) {
		max = int(b.nadd)
	}
	defer chainUnwound(p)
	engine.X.ChainStart(as)
	k := int(C.asx_chain(C.uintptr_t(uintptr(unsafe.Pointer(r))), C.uintptr_t(uintptr(unsafe.Pointer(b))), C.uint32_t(max)))
	engine.X.ChainEnd(as)
	p.chaining, p.chainAs, p.chainB, p.chainPrev = false, nil, nil, nil
	p.chains++
	p.chainSteps += uint64(k)
	if r.entered == 0 {
		c := r.img[r.pos]
		if k == int(b.nadd) && r.plain != 0 {
			allRan(as, b, c, p, prev, k)
			return
		}
		enter(p, as, b, k)
	}
	s, c, nin := p.chainStep, p.chainImg, p.chainN
	p.chainStep, p.chainImg, p.chainN = nil, nil, 0
	finish(s, c, p, prev, nin)
}

// allRan ends a chain whose k steps all ran plainly, c being the last
// one's image: as succeeds with c's values, as its sub-steps would have
// ended it.
func allRan(as *engine.Steps, b, c *C.asx_bsi, p *pool, prev *C.asx_bsi, k int) {
	var vals [engine.MaxArgs]engine.Value
	m := argsOf(&c.s.out, &vals) // plain values: views of C memory, none owned
	c.s.out = C.FutoInArgs{}
	c.mode = C.ASX_STALE
	c.rec = 0
	c.s = nil
	dropAdds(b)
	engine.X.ChainRan(as, k)
	p.end(b, prev)
	as.Success(vals[:m]...)
}

// dropAdds empties b's record of adds, all run or handed to the engine.
func dropAdds(b *C.asx_bsi) {
	adds := b.s.adds[:b.nadd]
	for i := range adds {
		adds[i] = C.asx_add{}
	}
	b.nadd, b.added, b.rec = 0, 0, 0
}

// enter hands the engine the chain's current step, the k-th of b's adds
// (its callback ran, or runs now): the adds from it on become sub-steps of
// as, that step on its ring image, and the engine enters it as running
// with the values the previous step succeeded with. The ring gets a fresh
// image in its place. Its record is applied by finish, as any C step's.
func enter(p *pool, as *engine.Steps, b *C.asx_bsi, k int) {
	r := p.ring
	c := r.img[r.pos]
	r.img[r.pos] = p.ringImage(as)
	var vals [engine.MaxArgs]engine.Value
	nin := argsOf(r.in, &vals)
	engine.X.ChainRan(as, k-1)
	adds := b.s.adds[k-1 : b.nadd]
	bindImage(c, as, p, C.ASX_RECORD)
	var ef engine.ErrorFunc
	if adds[0].eh != nil {
		ef = runCError
	}
	s := engine.X.AddBinding(as, runC, ef, unsafe.Pointer(c))
	if s == nil {
		// ChainBudget vetted as: the running step, nothing raised.
		panic("abi: the engine refused a chain's step")
	}
	entry(c).steps = s
	for i := 1; i < len(adds); i++ {
		a := &adds[i]
		addC(as, p, a.f, a.eh, a.data)
	}
	dropAdds(b)
	b.s = nil // the parent's record is over: p.end's part for b
	if engine.X.EnterSub(as, vals[:nin]) != s {
		panic("abi: the engine did not enter a chain's step")
	}
	p.recorder = c // c's callback records now; nested ones nest inside it
	r.entered = 1
	// finish is told of no arguments: they are in the other chain
	// scratch (r.in), none owned, none pinned, and the next chain empties
	// them.
	p.chainStep, p.chainImg, p.chainN = s, c, 0
}

// asxGoChainEnter is leave_chain's call: the chain step whose image is c
// calls into Go, so the engine is given it first.
//
//export asxGoChainEnter
func asxGoChainEnter(c *C.asx_bsi) {
	enterChained(c)
}

// enterChained enters c's step if c is the image of a chain step that runs
// and was not entered yet: Go code is about to act on it (asxGoChainEnter,
// or Wrap of its pointer from Go code its callback called).
func enterChained(c *C.asx_bsi) {
	p := entry(c).pool
	if p == nil || !p.chaining || p.ring.entered != 0 || p.ring.img[p.ring.pos] != c {
		return
	}
	enter(p, p.chainAs, p.chainB, int(p.ring.k))
}

// chainUnwound cleans up after a Go panic that unwound through asx_chain
// (Go code a chain step's callback called raised an Error, or panicked):
// the engine recovers it as raised by its running step, which must then be
// the chain's current one, as without the chain.
func chainUnwound(p *pool) {
	if !p.chaining {
		return
	}
	C.asx_chain_abort()
	p.chains++
	p.chainSteps += uint64(p.ring.k)
	if p.ring.entered == 0 {
		enter(p, p.chainAs, p.chainB, int(p.ring.k))
	}
	engine.X.ChainEnd(p.chainAs)
	p.chaining, p.chainAs, p.chainB, p.chainPrev = false, nil, nil, nil
	p.chainStep, p.chainImg, p.chainN = nil, nil, 0
}

// enterData is the engine's Bridge.Enter: data is a reactor's pool.
func enterData(data unsafe.Pointer) {
	if p := (*pool)(data); p != nil && p.chaining && p.ring.entered == 0 {
		enter(p, p.chainAs, p.chainB, int(p.ring.k))
	}
}

// chainRing returns p's ring, made on first use.
func (p *pool) chainRing(as *engine.Steps) *C.asx_ring {
	if p.ring == nil {
		r := (*C.asx_ring)(C.calloc(1, C.size_t(unsafe.Sizeof(C.asx_ring{}))))
		if r == nil {
			panic("abi: out of C memory for a chain ring")
		}
		for i := range r.img {
			r.img[i] = p.ringImage(as)
		}
		for i := range r.s {
			r.s[i] = (*C.asx_scratch)(C.calloc(1, C.size_t(unsafe.Sizeof(C.asx_scratch{}))))
			if r.s[i] == nil {
				panic("abi: out of C memory for a chain's scratch")
			}
		}
		p.ring = r
	}
	return p.ring
}

// ringImage takes a free image of p for the ring: unbound and stale until
// a chain step runs on it, and then stale again until enter binds it.
func (p *pool) ringImage(as *engine.Steps) *C.asx_bsi {
	b := p.take()
	b.next_free = nil
	b.mode = C.ASX_STALE
	g := entry(b)
	g.steps, g.pool = nil, p
	if r := as.Reactor(); g.r.Load() != r {
		g.r.Store(r)
	}
	return b
}
