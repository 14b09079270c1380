// This file holds the step-ending core every path uses (engine.go,
// cancel.go and unwind.go call it): what runs when a step ends for good.

package engine

// endStep runs what must run when f ends for good (success after its
// sub-steps, an error its handler did not recover, cancel): its cancel or
// finally handler, then the Leave of the Lock it entered.
func (e *engine) endStep(f *Steps) {
	e.runCancel(f)
	if f.flags&fLocked != 0 {
		f.flags &^= fLocked
		f.fl.locked--
		e.leaveLock(f)
	}
}

// completed is endStep for a step that succeeded: a cancel handler set
// with SetCancel does not run then, a finally handler and a Leave do.
func (e *engine) completed(f *Steps) {
	if f.flags&fFinally != 0 {
		e.runCancel(f)
	}
	if f.flags&fLocked != 0 {
		e.leaveCompleted(f)
	}
}
