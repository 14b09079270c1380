package reactor

import "github.com/asyncsteps/asyncsteps/internal/goid"

// Loop is a loop callback's hold on its reactor: what Reactor.Loop returns
// on the loop. Its Immediate and RunUntilIdle are the Reactor's, without
// the question the Reactor's ask first, "which goroutine is calling?" (a
// runtime call on each: the identity of the Turn and EmptyIteration rows).
// Holding the Loop is the answer: it records the goroutine that held the
// loop word when it was made and the loop's generation (which stretch of
// that hold, below), and its methods compare them with the loop word and
// the current generation (two loads and two compares) instead of asking
// the runtime.
//
// Where a Loop is valid: on the goroutine that made it, while that
// goroutine holds its reactor's loop word, within the stretch of that hold
// that made it: inside the loop callback (or engine step) that called
// Reactor.Loop, and in drives nested in it (RunUntilIdle, its own or the
// Reactor's). Make one in each callback that uses it; do not keep it in a
// structure that outlives the callback: a real loop's callbacks may run on
// another goroutine (Assist, a parked loop's turn run by a waiter), and a
// manual reactor's on whichever goroutine drives it.
//
// The stretch is what the reactor's generation (loopGen) tells apart: it
// moves at the start and the end of every outermost iteration (a real
// loop's, an assist's, a manual reactor's Iterate and Advance) and before
// the loop word is given up at the end of every hold that may have run a
// callback (a manual reactor's outermost drive, a waiter's turn run in a
// parked loop's place, the shutdown). So one stretch is one outermost
// iteration; one whole outermost RunUntilIdle drive of a manual reactor
// (its loop is written out: nested drives and its own passes keep a Loop
// held); or, for callbacks run outside any iteration (a real loop's I/O
// callbacks, a waiter's direct task or flows), the rest of that hold until
// an iteration begins.
//
// What is checked: a Loop used after its stretch ended (by anyone: its
// maker in a later callback, or another goroutine, whoever holds the word
// then, even a new goroutine that reuses the maker's identity; "after" as
// the memory model says it, e.g. told by a later callback through a
// channel: a use merely concurrent with the stretch's end is the race
// below), or where its
// maker does not hold the loop word (on a real loop parked or run by
// another goroutine, on another reactor's loop), takes the checked path:
// its method does what the Reactor's does there (Reactor.Immediate posts
// through the ring or takes an idle manual reactor; RunUntilIdle drives a
// manual reactor from outside, or panics naming the mistake on a real
// one). Never a corrupted queue, only the slower path. What is not
// checked: a Loop handed to another goroutine and used there while the
// goroutine that made it still holds the loop word within its stretch.
// That is a data race on the loop's queue, which the load-and-compare
// cannot see: it reads the word, which names the maker, not the caller.
// Built with -race (or -tags asyncsteps_debug), every method also
// compares the caller's own identity (goid.Current) first and takes the
// checked path on a mismatch, so the race detector's runs see such a Loop
// behave as the Reactor would. The generation is 32 bits: a Loop kept for
// 2^32 stretches may read as held again.
//
// The zero Loop is not valid: its methods panic on a nil Reactor.
type Loop struct {
	r   *Reactor
	g   uintptr // goid.Current() of the goroutine that made the Loop, which then held r.loopG
	gen uint32  // r.loopGen when the Loop was made
}

// Loop returns the calling callback's hold on r's loop, and true, when the
// caller is r's loop (IsSameThread: inside a loop callback or an engine
// step). Off the loop it returns false and a Loop that is never held: its
// methods are the Reactor's (Immediate posts through the ring,
// RunUntilIdle drives a manual reactor or panics naming the mistake on a
// real one), so `l, _ := r.Loop()` on the wrong goroutine is slower, not
// wrong. One goroutine identity, as IsSameThread; the Loop's methods then
// need none.
func (r *Reactor) Loop() (Loop, bool) {
	me := goid.Current()
	if r.loopG.Load() != me {
		return Loop{r: r, g: notHeldG}, false
	}
	return Loop{r: r, g: me, gen: r.loopGen}, true
}

// notHeldG is the maker a Loop made off the loop records: never a
// goroutine's address (those are aligned), nor 0 (no holder) nor parkedG,
// so loopG never equals it and held is always false.
const notHeldG = 1

// Reactor returns the reactor l holds.
func (l Loop) Reactor() *Reactor { return l.r }

// Immediate is Reactor.Immediate from the loop: fn joins the loop's local
// queue, after every task queued there before it by this Loop, by
// Reactor.Immediate or by a Post on the loop, and runs in the same
// iteration's pass as they would. The Handle is the one Reactor.Immediate
// gives (Reactor.Cancel and IsValid take it, from any goroutine); the zero
// Handle after Close. Used where l is not valid and the check sees it
// (see Loop: all but another goroutine within l's stretch), it is
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
// panic handler. Used where l is not valid and the check sees it (see
// Loop), it is Reactor.RunUntilIdle.
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
