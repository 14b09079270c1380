//go:build linux

package reactor

import (
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/storerel"
)

// RunParked is PostRun's direct way alone, for a goroutine outside the
// loops that starts a flow on a parked reactor (engine's Execute, issue
// 19): when r is a real reactor whose loop is parked with nothing queued
// (ring, overflow and local queue empty), not closing and not made with
// Options.OwnThread, and the caller is an ordinary goroutine outside any
// turn run in a loop's place, the caller takes the loop word, runs cb
// (never nil) as the first task of the loop's turn, and gives the word
// back; it reports whether it did. Otherwise it does nothing and reports
// false, and the caller posts as before (PostRun).
//
// What cb leaves is handled as directTurn handles it: when it only
// readied flows of the attached layer, they run once more here; anything
// else (a local or posted task, a timer added or canceled, foreign work,
// flows still ready after maxIterPerTurn iterations) takes the turn's
// iterations, the timerfd is re-armed if the wheel changed, and the loop
// is woken for what is left. Metrics count the task in TasksRun and one
// iteration, as PostRun's direct task.
//
// It is PostRun's direct way with less machinery per call: no check of
// the loop word twice, the word's end in one deferred method call (its
// arguments stored, not a closure over six variables: ~45 instructions
// of postRun's ~125), the work after cb only when cb left any.
func (internals) RunParked(r *Reactor, cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) bool {
	if r.loopG.Load() != parkedG || r.os.ownThread || r.closed.Load() || r.overflow.active.Load() || !r.inbox.Empty() {
		return false
	}
	return r.runParked(cb, arg, aux)
}

// RunParkedP is RunParked for a cb with a result: it returns cb's result
// and whether it ran cb (RunParked's report). A cb that panicked past
// every recover ran (runParked's deferred end handled the panic as
// RunParked's) and its result is nil. engine's Promise off the loop takes the
// Promise it made under the loop word this way, on its own stack: read
// from the root after the word is given back, it could be a released
// and reused root's (a step's ReleaseAtEnd ends the flow inside cb).
func (internals) RunParkedP(r *Reactor, cb func(arg unsafe.Pointer, aux uint64) unsafe.Pointer, arg unsafe.Pointer, aux uint64) (unsafe.Pointer, bool) {
	if r.loopG.Load() != parkedG || r.os.ownThread || r.closed.Load() || r.overflow.active.Load() || !r.inbox.Empty() {
		return nil, false
	}
	return r.runParkedP(cb, arg, aux)
}

// runParked is RunParked for a loop found parked with nothing posted.
func (r *Reactor) runParked(cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) (ran bool) {
	me := goid.Current()
	slot, ok := claimAssist(me)
	if !ok {
		return false
	}
	if !r.loopG.CompareAndSwap(parkedG, me) {
		releaseAssist(slot)
		return false
	}
	if !r.local.empty() || r.closed.Load() {
		// A turn run in the loop's place left local work (rare), or Close
		// came: PostRun's ring way, or Post's refusal.
		storerel.Uintptr(&r.loopG, parkedG)
		releaseAssist(slot)
		return false
	}
	changes := r.wheel.Changes()
	// The word's end if cb panics past every recover or exits its
	// goroutine; on the way out below it finds the word given back and
	// returns. Returning normally, runParked gave the word back: nothing
	// to do. Still held by me, cb panicked past every recover, or exited
	// its goroutine (runtime.Goexit): as postRun for its direct task, the
	// panic goes to the PanicHandler under the word (recovered: runParked
	// returns true, the task counts as run), the turn ends, and the loop
	// is woken for what the task left; a handler that panics in turn, or
	// a Goexit, gives the word back all the same and goes on. A closure
	// that tests the word itself, not a deferred method call: the method
	// value's wrapper and the call from it were ~25 of a FanOut flow's
	// instructions (profiles/notes/2026-11-28-fan6-round14.md).
	defer func() {
		if r.loopG.Load() == me {
			r.endPanickedTurn(recover(), slot, changes)
		}
	}()
	r.os.assists++      // the flows may watch or unwatch: the loop's events may be stale
	r.m.nowStale = true // borrowedTurn's clock rule
	r.m.tasks++         // a post from another goroutine (Metrics.TasksRun), which skipped the ring
	r.m.iterations++    // the iteration that runs it, as directTurn counts
	ran = true
	cb(arg, aux)
	more := false
	if !r.onlyFlows(changes) || *r.extMay.Load() {
		more = r.parkedRest(slot, changes)
	}
	r.loopGen++ // before the release: Loops made in this hold stop being held (leaveOutermost)
	storerel.Uintptr(&r.loopG, parkedG)
	releaseAssist(slot)
	if more {
		r.wakeLoop()
	}
	return true
}

// runParkedP is runParked with cb's result (RunParkedP): a copy, so that
// Execute's direct start (runParked) pays nothing for it; change the two
// together.
func (r *Reactor) runParkedP(cb func(arg unsafe.Pointer, aux uint64) unsafe.Pointer, arg unsafe.Pointer, aux uint64) (res unsafe.Pointer, ran bool) {
	me := goid.Current()
	slot, ok := claimAssist(me)
	if !ok {
		return nil, false
	}
	if !r.loopG.CompareAndSwap(parkedG, me) {
		releaseAssist(slot)
		return nil, false
	}
	if !r.local.empty() || r.closed.Load() {
		// A turn run in the loop's place left local work (rare), or Close
		// came: PostRun's ring way, or Post's refusal.
		storerel.Uintptr(&r.loopG, parkedG)
		releaseAssist(slot)
		return nil, false
	}
	changes := r.wheel.Changes()
	// runParked's deferred end, the same (a recovered panic: ran, res nil).
	defer func() {
		if r.loopG.Load() == me {
			r.endPanickedTurn(recover(), slot, changes)
		}
	}()
	r.os.assists++      // the flows may watch or unwatch: the loop's events may be stale
	r.m.nowStale = true // borrowedTurn's clock rule
	r.m.tasks++         // a post from another goroutine (Metrics.TasksRun), which skipped the ring
	r.m.iterations++    // the iteration that runs it, as directTurn counts
	ran = true
	res = cb(arg, aux)
	more := false
	if !r.onlyFlows(changes) || *r.extMay.Load() {
		more = r.parkedRest(slot, changes)
	}
	storerel.Uintptr(&r.loopG, parkedG)
	releaseAssist(slot)
	if more {
		r.wakeLoop()
	}
	return res, true
}

// parkedRest is the rest of runParked's turn when its task left work:
// directTurn's after its task. A panic that passes every recover of the
// turn (a PanicHandler that panics) gives the word back here, the loop
// woken, and goes on to the caller (runParked's deferred end then finds
// the word given back). Loop word only.
//
//go:noinline
func (r *Reactor) parkedRest(slot int, changes uint64) (more bool) {
	held := true
	defer func() {
		if held {
			r.abandonTurn(slot)
		}
	}()
	i := 0
	if r.onlyFlows(changes) {
		// Only flows were readied: they run once, as directTurn's first
		// iteration's flows.
		i = 1
		if !r.ext.Load().run.RunReady() && r.onlyFlows(changes) {
			held = false
			return false // nothing left, the timerfd's arming stands
		}
	}
	for ; i < maxIterPerTurn; i++ {
		if more = r.iterate(); !more || r.closed.Load() {
			break
		}
	}
	if !more && !r.closed.Load() && (r.wheel.Len() != 0 || r.os.armedAt != 0) && r.armTimer() != nil {
		more = true
	}
	held = false
	return more
}
