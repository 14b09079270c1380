//go:build linux

package reactor

import (
	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/storerel"
)

// Borrowing a parked loop's word for one change of its state: a producer
// that would post a task to a parked reactor, only for that task to make a
// flow ready there (engine's External.Pass: a Mutex handed to a flow
// waiting on another reactor), makes the flow ready itself, under the
// word, and wakes the loop as a push would (wakeLoop: the kick, or the
// hand-off that runs the turn on the posting loop). The ring, the task
// and the mailbox the task would carry are skipped; the loop (or whoever
// runs its next turn) finds the flow ready.
//
// While the word is borrowed the borrower is the loop for IsSameThread,
// as in an assist, but it runs no callback: it changes loop-owned state
// (the engine's ready queue, a timer of the step it resumes) and gives the
// word back at once. A loop that wakes meanwhile waits in unpark, as for
// an assist; the events of its wait stay valid (no watch changed, and the
// timerfd is left as it was: a timer the borrower stopped can at most
// wake the loop once for nothing, whose next sleep re-arms it), so the
// borrow is not counted as an assist.

// xTakeParked takes r's loop word for the caller if r is a real reactor
// whose loop is parked, that is not closing and that was not made with
// Options.OwnThread; the caller must give it back with xGiveParked, after
// touching only loop-owned state, running no callback of its own. (What it
// changes may still run a hook: the engine's Bridge.Drop of a flow's owned
// values, which an OwnThread reactor keeps on its thread, as every other
// callback.)
func (r *Reactor) xTakeParked() bool {
	if r.loopG.Load() != parkedG || r.closed.Load() || r.os.ownThread { // parkedG: a real loop, r.os set
		return false
	}
	return r.loopG.CompareAndSwap(parkedG, goid.Current())
}

// xGiveParked gives back the word xTakeParked took; woke says the borrower
// left work ready, which the loop must then be woken for as for a post.
func (r *Reactor) xGiveParked(woke bool) {
	if woke && r.sleeping.Load() && oweKept(r, r.loopG.Load()) {
		// The calling loop runs r's turn after its callback, the
		// sleeping flag left set (handoff_linux.go).
		r.loopGen++ // before the release: Loops made in this hold stop being held (leaveOutermost)
		storerel.Uintptr(&r.loopG, parkedG)
		return
	}
	r.loopGen++ // before the release: Loops made in this hold stop being held (leaveOutermost)
	storerel.Uintptr(&r.loopG, parkedG)
	if woke {
		r.wakeLoop()
	}
}

// A goroutine outside the loops that borrows a parked loop's word to
// complete a step there (engine's External.Success from a worker
// goroutine) does not stop at making the flow ready and waking
// the loop for it: it runs the loop's turn itself before it gives the word
// back, as Execute's caller does (PostRun), so the flow goes on to its
// next wait or its end without a thread wake-up, and its lines stay on the
// core that just wrote them. A loop that borrows (a Mutex handed over from
// a flow) keeps the plain borrow and its owed turn (handoff_linux.go); so
// does a goroutine already running a turn in some loop's place (its
// callbacks never run another reactor's), which claimAssist refuses.

// Taken is what xTakeParkedRun took: nothing (takenNone), the plain
// borrow (takenBorrow), or the word with the assist slot of a goroutine
// that will run the turn (any other value: the slot).
const (
	takenNone   = -1
	takenBorrow = -2
)

// xTakeParkedRun is xTakeParked that, for a goroutine outside the loops
// and outside any assist, also claims an assist slot, so that
// xGiveParkedRun may run the turn in the loop's place.
func (r *Reactor) xTakeParkedRun() int {
	if r.loopG.Load() != parkedG || r.closed.Load() || r.os.ownThread { // parkedG: a real loop, r.os set
		return takenNone
	}
	me := goid.Current()
	if inOwnSlot(me) {
		// A loop in its own slot, the usual borrower from a loop: the
		// plain borrow, at the cost of this one look.
		if r.loopG.CompareAndSwap(parkedG, me) {
			return takenBorrow
		}
		return takenNone
	}
	slot, ok := claimAssist(me)
	if !r.loopG.CompareAndSwap(parkedG, me) {
		if ok {
			releaseAssist(slot)
		}
		return takenNone
	}
	if !ok {
		return takenBorrow // a loop off its slot, or inside an assist
	}
	r.os.turnChanges = r.wheel.Changes()
	return slot
}

// xGiveParkedRun gives back what xTakeParkedRun took. After a plain borrow
// it is xGiveParked. Otherwise, when the caller left work ready (woke),
// it first runs the ready flows on the calling goroutine (flowsTurn), and
// wakes the loop only for work they leave.
func (r *Reactor) xGiveParkedRun(t int, woke bool) {
	switch {
	case t == takenBorrow:
		r.xGiveParked(woke)
		return
	case t < 0:
		return
	}
	if !woke {
		r.loopGen++ // before the release: Loops made in this hold stop being held (leaveOutermost)
		storerel.Uintptr(&r.loopG, parkedG)
		releaseAssist(t)
		return
	}
	// A panic that passes every recover of the turn (a PanicHandler
	// that panics) goes on to the caller, the word given back and the
	// loop woken first, as for postRun.
	held := true
	defer func() {
		if held {
			r.abandonTurn(t)
		}
	}()
	more := r.flowsTurn(r.os.turnChanges)
	r.loopGen++ // before the release: Loops made in this hold stop being held (leaveOutermost)
	storerel.Uintptr(&r.loopG, parkedG)
	releaseAssist(t)
	held = false
	if more {
		r.wakeLoop()
	}
}

// flowsTurn is the turn a goroutine outside the loops runs after it made
// flows ready under a parked loop's borrowed word (xGiveParkedRun): the
// engine's ready flows run once (each up to its next wait, its end or its
// turn's budget), as the first iteration of the loop's own turn would run
// them, and nothing else; whatever they leave (flows still ready, a local
// post, foreign work) is the loop's, woken for it, so that the caller,
// which came to finish one step, never runs a long turn of flows that do
// not wait (a Mutex section looped by the flow it let in would otherwise
// run up to maxIterPerTurn budgets on the caller, ahead of every other
// worker). Timers the flows added or stopped re-arm the timerfd here, as
// at the end of directTurn; due timers are the loop's (its timerfd was
// armed for the wheel's earliest deadline before it parked). It reports
// whether the loop must be woken. Loop word only.
func (r *Reactor) flowsTurn(changes uint64) (more bool) {
	r.os.assists++      // the flows may watch or unwatch: the loop's events may be stale
	r.m.nowStale = true // borrowedTurn's clock rule
	r.m.iterations++    // one iteration, as the loop's would count
	if *r.extMay.Load() {
		more = r.ext.Load().run.RunReady()
	}
	if more || !r.local.empty() || r.work.foreign || r.closed.Load() {
		return true
	}
	if r.wheel.Changes() != changes && r.armTimer() != nil {
		return true // the loop arms it again and ends with the error
	}
	return false
}
