package reactor

import "github.com/asyncsteps/asyncsteps/internal/goid"

// Loop is a loop callback's hold on its reactor: what Reactor.Loop returns
// on the loop. Its Immediate and RunUntilIdle are the Reactor's, without
// the question the Reactor's ask first, "which goroutine is calling?" (a
// runtime call on each: the identity of the Turn and EmptyIteration rows).
// Holding the Loop is the answer: it records the goroutine that held the
// loop word when it was made and the loop's iteration, and its methods
// compare them with the loop word and the current iteration (two loads
// and two compares) instead of asking the runtime.
//
// Where a Loop is valid: on the goroutine that made it, while that
// goroutine holds its reactor's loop word, within the loop iteration that
// made it: inside the loop callback (or engine step) that called
// Reactor.Loop, and in drives nested in it (RunUntilIdle, its own or the
// Reactor's). Make one in each callback that uses it; do not keep it in a
// structure that outlives the callback: a real loop's callbacks may run on
// another goroutine (Assist, a parked loop's turn run by a waiter), and a
// manual reactor's on whichever goroutine drives it.
//
// What is checked: a Loop used where its goroutine no longer holds the
// loop word (after the callback's drive ended, on a real loop now parked
// or run by another goroutine, or on another reactor's loop), or after the
// outermost iteration that made it ended (a real loop's next iteration or
// its spin before sleeping, where it keeps its word; a nested Iterate or
// Advance), takes the checked path: its method does what the Reactor's
// does there (Reactor.Immediate posts through the ring or takes an idle
// manual reactor; RunUntilIdle drives a manual reactor from outside, or
// panics naming the mistake on a real one). Never a corrupted queue, only
// the slower path. What is not checked: a Loop handed to another goroutine
// and used there while the goroutine that made it still holds the loop
// word within the same iteration, or in a later hold of the word by the
// same goroutine that began no outermost iteration (a manual reactor's
// later RunUntilIdle drive; a parked real loop's flows run again by the
// same goroutine without a turn). That is a data race on the loop's queue, which
// the load-and-compare cannot see (goroutine identities are the runtime's
// g addresses, which a new goroutine may reuse after one exits, so "the
// word still names the maker" does not prove "the caller is the maker").
// Built with -race (or -tags asyncsteps_debug), every method also compares the caller's own identity
// (goid.Current) first and takes the checked path on a mismatch, so the
// race detector's runs see such a Loop behave as the Reactor would. The
// iteration count is 32 bits: a Loop kept for 2^32 iterations may read as
// held again (only by the goroutine that holds the word, or as above).
//
// The zero Loop is not valid: its methods panic on a nil Reactor.
type Loop struct {
	r   *Reactor
	g   uintptr // goid.Current() of the goroutine that made the Loop, which then held r.loopG
	gen uint32  // r.loopGen when the Loop was made
}

// Loop returns the calling callback's hold on r's loop, and true, when the
// caller is r's loop (IsSameThread: inside a loop callback or an engine
// step); off the loop it returns the zero Loop and false. One goroutine
// identity, as IsSameThread; the Loop's methods then need none.
func (r *Reactor) Loop() (Loop, bool) {
	me := goid.Current()
	if r.loopG.Load() != me {
		return Loop{}, false
	}
	return Loop{r: r, g: me, gen: r.loopGen}, true
}

// Reactor returns the reactor l holds.
func (l Loop) Reactor() *Reactor { return l.r }

// Immediate is Reactor.Immediate from the loop: fn joins the loop's local
// queue, after every task queued there before it by this Loop, by
// Reactor.Immediate or by a Post on the loop, and runs in the same
// iteration's pass as they would. The Handle is the one Reactor.Immediate
// gives (Reactor.Cancel and IsValid take it, from any goroutine); the zero
// Handle after Close. Used where l is not valid (see Loop), it is
// Reactor.Immediate.
//
//go:nosplit
func (l Loop) Immediate(fn func()) Handle {
	// No stack check of its own (go:nosplit), as Reactor.Immediate.
	// Not inlined: the append alone is half the inliner's budget, and a
	// fallback call (grow, the checked path) costs more than the other
	// half; out of line, the append is Reactor.Immediate's with a load
	// and a compare in place of the goroutine identity.
	r := l.r
	if !l.held() {
		return l.immediateSlow(fn)
	}
	if r.closed.Load() {
		return Handle{}
	}
	// The append written out (keep alike with Reactor.Immediate's two
	// copies: see localQueue.grow).
	q := &r.local
	p := q.tail
	if p-q.head == uint64(len(q.buf)) {
		q.grow()
	}
	s := q.slot(p)
	// arg is nil already and aux unused with fn (invariant 4 of
	// local.go); a nil fn is named when it runs (invariant 5).
	s.fn, s.cb = fn, nil
	q.tail = p + 1
	return Handle{pos: localBit | p, kind: handleLocal}
}

// immediateSlow is Loop.Immediate for a Loop not held: Reactor.Immediate,
// which asks the identity itself (posts through the ring from another
// goroutine). Out of line, off the turn's path.
//
//go:noinline
func (l Loop) immediateSlow(fn func()) Handle { return l.r.Immediate(fn) }

// RunUntilIdle is Reactor.RunUntilIdle from the loop: it iterates, nested
// in the calling callback's drive, until nothing is ready (due timers,
// posted tasks, the local queue, the engine's ready flows), as a callback's
// RunUntilIdle does (on a real reactor's loop too: not checked there, as
// Reactor.RunUntilIdle is not). Callbacks' panics go to the reactor's
// panic handler. Used where l is not valid (see Loop), it is
// Reactor.RunUntilIdle.
//
//go:nosplit
func (l Loop) RunUntilIdle() {
	// No stack check of its own (go:nosplit), as Reactor.RunUntilIdle:
	// a small fixed frame, every callee checks its own stack. Not
	// inlined: the idle look is ~70 of the inliner's budget of 80 and
	// the call for the rest 57.
	r := l.r
	if !l.held() {
		r.RunUntilIdle()
		return
	}
	// Reactor.RunUntilIdle's nested loop (keep alike with its two copies
	// and iterate), written with labels so that each look is made once:
	// the first iteration enters at run when the local queue holds a
	// task (the Turn row), and an empty iteration is the looks alone,
	// before any store of r to the frame (the EmptyIteration row).
	if r.local.empty() {
		r.m.iterations++
		if !r.work.any() && r.inbox.Idle() { // Idle covers the overflow list
			return
		}
		goto full
	}
run:
	r.m.iterations++
	r.runLocal()
	if r.local.empty() && !r.work.any() && r.inbox.Idle() {
		return
	}
full:
	if !r.iterateFull() {
		return
	}
	if !r.local.empty() {
		goto run
	}
	r.m.iterations++
	if !r.work.any() && r.inbox.Idle() {
		return
	}
	goto full
}
