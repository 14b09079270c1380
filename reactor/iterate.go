package reactor

import (
	"unsafe"

	"github.com/asyncsteps/asyncsteps/timerwheel"
)

// maxInboxBatch bounds how many cross-goroutine tasks one iteration takes,
// so a flood from other goroutines cannot starve timers and flows.
const maxInboxBatch = 1024

// maxTimersPerIteration bounds the timers (loop-side Immediates included)
// one iteration fires.
const maxTimersPerIteration = 1024

// iterate runs what is ready now, once: the local queue, posted tasks, due
// timers, then the engine's ready flows. It reports whether work is still ready.
func (r *Reactor) iterate() bool {
	r.m.iterations++
	r.loopGen++ // Loops made before this iteration stop being held (loopctx.go)
	// Local work first: a goroutine that queued locally on an idle manual
	// reactor and then, finding it driven, posted through the ring, sees
	// its tasks run in its order (takeLoop keeps the converse).
	//
	// Then, when nothing (more) is ready, the answer the full pass below
	// would give, in one look at each source instead of two and no
	// deadline lookup (the cost of the EmptyIteration and Turn rows):
	// the local queue (once: where it was empty before, it still is),
	// the wheel and the engine's pending flag in one word (workWord), the
	// ring, which other goroutines fill, and with it the overflow list
	// (a ring diverted to the list is not Idle: overflowList). Written out
	// rather than a call of a helper: the call itself was a third of what
	// the shortcut cost that iteration. A task posted after this look is
	// found by the next iteration, or, on a real reactor, by the sleep
	// protocol's re-check after the loop word is published (doc.go), as
	// after a full pass that found nothing. The ring's look is Idle, not
	// Empty: a closed ring reads as work, so after Close every iteration
	// takes the full pass, which finds Close (one instruction fewer).
	if !r.local.empty() {
		r.runLocal()
		if !r.local.empty() {
			more := r.iterateFull()
			r.loopGen++ // and those made in it stop too: a real loop goes on to spin or park holding its word
			return more
		}
	}
	if !r.work.any() && r.inbox.Idle() {
		r.loopGen++ // (keep the three alike)
		return false
	}
	more := r.iterateFull()
	r.loopGen++
	return more
}

// iterateFull is the rest of iterate once its shortcut found work beyond
// the local queue, which has run: posted tasks, due timers, the engine's
// ready flows, then whether work is still ready. Out of line so that
// RunUntilIdle can write iterate's head out in its own loop (one frame
// fewer per nested turn and per empty iteration) and still
// share this with iterate.
//
//go:nosplit
func (r *Reactor) iterateFull() bool {
	// No stack check of its own (go:nosplit), as RunUntilIdle: a small
	// fixed frame, every callee checks its own stack, and the linker
	// proves the chain fits.
	if !r.inbox.Empty() { // two loads: cheaper than a pop that finds nothing
		r.drainInbox()
	}
	if r.overflow.active.Load() {
		r.drainOverflow()
	}
	// The clock is read once, and only when a timer is pending: an
	// iteration with only local work pays for neither.
	var now uint64
	haveNow := false
	if r.work.timers && r.wheel.Len() > 0 {
		now, haveNow = r.loopTick(), true
		if !r.inbox.Empty() || r.overflow.active.Load() {
			// Posted after the drain above and before the clock was
			// read (the loop's thread descheduled between them, or the
			// drain stopped at its bound): a Deferred among them counts
			// its deadline from its call and may be due before timers
			// of the wheel due now; in the wheel first, it fires first.
			// One posted after the read is due after now: the wheel's
			// due timers precede it rightly. Deadline order (doc.go)
			// then holds as long as the drains keep up (maxInboxBatch).
			r.drainPosted()
		}
		r.fireDue(now)
	}
	if r.os != nil && r.closed.Load() {
		// Closed while this iteration's callbacks ran: the shutdown that
		// follows the turn ends the flows; none starts a step now.
		return false
	}
	more := false
	if *r.extMay.Load() {
		// extMay is set after ext, never to a flag of a slot without run:
		// the slot loaded here is that one or a later one.
		more = r.ext.Load().run.RunReady()
	}
	if more || !r.local.empty() || !r.inbox.Empty() || r.overflow.active.Load() {
		return true
	}
	if !r.work.timers || r.wheel.Len() == 0 {
		r.work.timers = false // workWord: the wheel is empty
		return false          // no timer: no deadline to look up
	}
	if next, ok := r.wheel.NextDeadline(); ok {
		if !haveNow {
			now = r.currentTick()
		}
		return next <= now
	}
	return false
}

// drainPosted is iterateFull's second look at what other goroutines posted,
// after its clock read: the ring and the overflow list, as its first look.
// Out of line: rare (a post that raced the turn), and off the common turn.
//
//go:noinline
func (r *Reactor) drainPosted() {
	if !r.inbox.Empty() {
		r.drainInbox()
	}
	if r.overflow.active.Load() {
		r.drainOverflow()
	}
}

// drainInbox runs the tasks posted through the ring, at most maxInboxBatch.
func (r *Reactor) drainInbox() {
	i := 0
	for ; i < maxInboxBatch; i++ {
		t, ok := r.inbox.TryPop()
		if !ok {
			break
		}
		r.runTask(t, r.inbox.Consumed()-1)
	}
	r.m.tasks += uint64(i)
	if i > r.m.ringHigh {
		r.m.ringHigh = i // what was waiting, give or take what came meanwhile
	}
}

// fireDue runs the timers due at tick now, at most maxTimersPerIteration:
// a callback that schedules itself again at once (an Immediate from the
// loop is a timer due now) must not keep the loop from posted tasks and
// flows; the rest fires on the next iteration.
func (r *Reactor) fireDue(now uint64) {
	i := 0
	for ; i < maxTimersPerIteration; i++ {
		e, ok := r.wheel.Poll(now)
		if !ok {
			break
		}
		r.runEntry(e)
	}
	r.m.timers += uint64(i)
}

func (r *Reactor) runTask(t task, pos uint64) {
	if t.kind == taskDeferred {
		r.addRemoteTimer(t, pos)
		return
	}
	if r.remote.pending.Load() != 0 && r.takeCanceled(pos) {
		return
	}
	switch t.kind {
	case taskImmediate:
		r.safeCall(t.fn)
	case taskCall:
		if t.cb == nil {
			t.cb = nilPost // a nil Post named as on the local queue (invariant 5 of local.go)
		}
		r.safeCb(t.cb, t.arg, t.aux)
	case taskCancelTimer:
		r.wheel.Cancel(timerwheel.HandleOf(t.timerIdx, t.aux))
		r.takeTimerCanceled(t.seq)
	case taskForgetLocal:
		if r.takeTimerCanceled(t.seq) {
			if lt := r.local.at(t.seq &^ localBit); lt != nil {
				lt.cancel()
			}
		}
	}
}

func (r *Reactor) runEntry(e timerwheel.Entry) {
	if e.Cb != nil {
		r.safeCb(e.Cb, e.Arg, e.Aux)
		return
	}
	if r.remote.timerPending.Load() != 0 { // not && (runLocalTo)
		if r.takeTimerCanceled(e.Aux) {
			return // canceled off the loop before it fired
		}
	}
	r.safeCall(e.Fn)
}

// safeCall and safeCb contain a panic to the one callback that raised it. The
// engine recovers its own panics, so this defer is the last line for user
// code given to Immediate or Deferred; it is open-coded and costs ~1ns.
func (r *Reactor) safeCall(fn func()) {
	defer r.recoverPanic()
	fn()
}

func (r *Reactor) safeCb(cb func(unsafe.Pointer, uint64), arg unsafe.Pointer, aux uint64) {
	defer r.recoverPanic()
	cb(arg, aux)
}

func (r *Reactor) recoverPanic() {
	if v := recover(); v != nil {
		r.panicHandler(v)
	}
}
