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
		storerel.Uintptr(&r.loopG, parkedG)
		return
	}
	storerel.Uintptr(&r.loopG, parkedG)
	if woke {
		r.wakeLoop()
	}
}
