package engine

import (
	"fmt"

	"github.com/asyncsteps/asyncsteps/internal/cast"
)

// setError records an error in the flow's State (spec 1.7): error_info,
// last_exception (err, or an *Error made from code and info) and
// async_stack, captured at f.
func (e *engine) setError(f *Steps, code, info string, err error) {
	st := f.fl.root.stateForWrite()
	st.ErrorInfo = info
	if err == nil {
		err = &Error{Code: code, Info: info}
	}
	st.LastException = err
	e.captureStack(f, st)
}

// raiseError records an error raised by the running callback of f; the
// caller then panics with raiseSignal.
func (e *engine) raiseError(f *Steps, code, info string) {
	e.setError(f, code, info, nil)
	e.raised = raise{kind: raiseError, code: code}
}

// recordPanic turns a panic recovered from a callback of f into the state of
// an InternalError.
func (e *engine) recordPanic(f *Steps, v any) {
	if f == nil {
		return
	}
	st := f.fl.root.stateForWrite()
	st.ErrorInfo = fmt.Sprint(v)
	st.LastException = &PanicError{Value: v}
	e.captureStack(f, st)
}

// captureStack fills st.AsyncStack with the entry PCs of the step functions
// from the root down to f, reusing its storage.
func (e *engine) captureStack(f *Steps, st *State) {
	s := st.AsyncStack[:0]
	for x := f; x != nil; x = x.parent {
		if pc := x.pc(); pc != 0 {
			s = append(s, pc)
		}
	}
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
	st.AsyncStack = s
}

func (f *Steps) pc() uintptr {
	switch f.kind {
	case kStep:
		if f.xfn != nil {
			return cast.FuncPC(f.xfn) // AddWith: the user's function, not the trampoline
		}
		return cast.PCOf(f.fn)
	case kBody:
		return f.parent.loop().pc
	}
	return 0
}

// unwind handles an error of code raised by f (spec 1.2): f's cancel handler
// runs, then its error handler, then those of the steps below, until one
// recovers or the flow ends.
func (e *engine) unwind(f *Steps, code string) {
	if e.yieldCanceled(f) {
		return // the callback that raised had canceled its own root
	}
	fl := f.fl
	for {
		fl.cur = f
		fl.action = actNone
		if f.ctl.Load()&xMask != xNone {
			f.releaseClaim()
		}
		e.discardQueued(f)
		{
			// A cancel handler runs before the error handler (spec 1.3); a
			// finally handler after it, and after any steps it adds: a
			// critical section entered by this step spans its error
			// handler (spec 2.1, sync: the callbacks run in the section).
			if f.flags&fFinally == 0 {
				e.runCancel(f)
			}
			if f.timed() {
				e.r.Stop(f.timer())
				f.tidx, f.tgen = 0, 0
			}
			if h := f.onerr; h != nil {
				f.onerr = nil // an error handler runs at most once (spec 1.2.1)
				next, recovered := e.callHandler(f, h, code)
				if recovered {
					return // a finally handler runs when the step ends
				}
				code = next
			}
			e.endStep(f) // a finally handler, a Lock's Leave: the handler did not recover
		}
		if f == fl.top {
			if fl.par != nil {
				e.branchFailed(fl, code)
			} else {
				e.finishRoot(fl.root, code)
			}
			return
		}
		p := f.parent
		e.releaseFrame(f)
		f = p
	}
}

// callHandler runs f's error handler h for code. It reports recovered=true
// when the handler called Success or added steps (fl.action is then set),
// or handled Break/Continue; otherwise it returns the code to keep
// unwinding with: the same on a silent return, the new one after Error.
func (e *engine) callHandler(f *Steps, h ErrorFunc, code string) (next string, recovered bool) {
	fl := f.fl
	f.setStatus(stRunning)
	// A Lock.Wait step that fails is done waiting (fRelock): its handler
	// may recover as any step's, with Success or sub-steps.
	f.flags = f.flags&^(fSucceeded|fWait|fTimeout|fRelock) | fHandler
	if f.flags&fFinally == 0 {
		f.oncancel = nil // a cancel handler has run; a finally handler waits for the step's end
	}
	if v, panicked := e.protectHandler(f, h, code); panicked {
		e.raised = raise{kind: raiseError, code: InternalError}
		e.recordPanic(f, v)
	}
	f.flags &^= fHandler
	if e.yieldCanceled(f) {
		e.raised = raise{}
		return "", true // the handler canceled its own root: nothing more runs
	}
	r := e.raised
	e.raised = raise{}
	switch r.kind {
	case raiseError:
		return r.code, false
	case raiseBreak, raiseContinue:
		e.loopControl(f, r)
		return "", true
	}
	switch {
	case f.flags&fSucceeded != 0:
		fl.action = actDone
		return "", true
	case f.qlast != nil:
		// Steps added in an error handler replace it at the same level (spec 1.2.1).
		f.setStatus(stActive)
		fl.clearArgs()
		fl.cur = f.dequeue()
		fl.action = actExec
		return "", true
	}
	return code, false
}

// protectHandler calls an error handler, recovering a panic.
func (e *engine) protectHandler(f *Steps, h ErrorFunc, code string) (v any, panicked bool) {
	defer func() {
		e.cur = nil
		if panicked {
			if v = recover(); v == raiseSignal {
				v, panicked = nil, false
			}
		}
	}()
	e.cur = f
	panicked = true
	h(f, code)
	panicked = false
	return
}

// The turn's unwinding paths below (batchStopped, cancelQueued, driveOn,
// exitedInTurn, caught) run only after a raise, a panic or a Goexit. They
// live here rather than beside run and drive1 in engine.go so that their
// size does not move the hot functions laid out after them: with them in
// engine.go, the fixes for a step that calls runtime.Goexit, which add
// no instruction to a step's path, made Simple ~25% slower by wall clock
// on the 2-vCPU EPYC (profiles/notes/2026-11-28-session26-tables.md).

// batchStopped goes on with a batch that runBatch stopped at e.batchFl:
// a flow canceled since it was queued (st batchCanceled), which it ends,
// or a raise or a panic inside a callback of the flow (batchRaised),
// which it unwinds and drives on, outside any deferred function; then it
// runs the rest of the batch.
//
//go:noinline
func (e *engine) batchStopped(st uint8) {
	for st != batchOver {
		fl := e.batchFl
		e.batchFl = nil
		if st == batchCanceled {
			// Whatever it was queued for (a timeout, an External's
			// result, a Sync hand-over) is dropped, outside the recover,
			// as before runBatch. The posted cancelRoot finds the run over.
			e.cancelQueued(fl.root)
		} else {
			e.driveOn(fl, &e.left)
			e.m.steps += uint64(turnBudget - e.left)
		}
		st = e.runBatch()
	}
}

// cancelQueued is cancelRun for a flow of RunReady's batch canceled since
// it was queued: its cancel handlers, Leaves and OnEnd run outside
// runBatch's recover, each under its own, which recovers a panic but
// cannot stop a runtime.Goexit, and gives back the running flag it found
// (set: RunReady's). A Goexit there ends the turn as driveOn's does
// (exitedInTurn), or the goroutine that drives the loop next would find
// RunReady still running (an Execute on the loop queued, engine.RunReady
// from a callback doing nothing) and the label of the batch's flow before
// it decided.
//
//go:noinline
func (e *engine) cancelQueued(rt *root) {
	done := false
	defer func() {
		if !done {
			e.exitedInTurn()
		}
	}()
	e.cancelRun(rt)
	done = true
}

// driveOn goes on driving fl after drive1 reported a raise or a panic
// inside a callback of the frame it left in e.raisedAt: RunReady's drive1
// call and this loop are drive. A raise or a panic inside a callback lands
// in drive1's recover; the flow is then unwound here, outside any deferred
// function, and driven on, so one recover serves a whole turn instead of a
// defer per step.
//
// settle runs the flow's error, cancel and OnEnd callbacks outside
// drive1's recover (each under its own, which recovers a panic but cannot
// stop a runtime.Goexit): driveOn's deferred call, on a path that is
// already the rare one (a raise), ends the turn for a Goexit there as
// caught ends it for one inside drive1, so that the goroutine that drives
// the loop next finds RunReady not running and no flow's label decided.
//
//go:noinline
func (e *engine) driveOn(fl *flow, budget *int) {
	done := false
	defer func() {
		if !done {
			e.exitedInTurn()
		}
	}()
	e.running = true // caught cleared it, for a Goexit
	for {
		f := e.raisedAt
		e.raisedAt = nil // no frame kept past its settling
		if n := fl.root.name(); n != e.label {
			e.switchLabel(n) // caught dropped it, for a Goexit
		}
		if e.panicked {
			v := e.panicV
			e.panicked, e.panicV = false, nil
			e.raised = raise{kind: raiseError, code: InternalError}
			e.recordPanic(f, v)
		} else {
			e.raised = e.caughtRaise // caught kept it aside, for a Goexit
		}
		e.caughtRaise = raise{}
		e.settle(f)
		if e.drive1(fl, budget) {
			done = true
			return
		}
	}
}

// exitedInTurn ends a turn that its goroutine leaves without returning (a
// runtime.Goexit in a callback; no panic gets past the callbacks' own
// recovers): RunReady is over, so loop callbacks may run flows again, and
// the label decided for the turn (e.label) is dropped with this
// goroutine's labels, for the next driving goroutine carries none of
// them (else the next flow of the same name would run unlabeled for a
// turn). caught does the same for a Goexit inside drive1's recover.
//
//go:noinline
func (e *engine) exitedInTurn() {
	e.running = false
	if e.label != nil {
		e.switchLabel(nil)
	}
}

// caught is drive1's recover path: v is what a callback of fl panicked with
// (raiseSignal for a raise; nil for runtime.Goexit, or for panic(nil) under
// GODEBUG=panicnil=1). It ends the callback's region; the frame to unwind
// goes to e.raisedAt and, for a panic, the value to e.panicV, which
// driveOn makes the flow's InternalError. A Goexit leaves nothing set that
// the next flow's callbacks would read: a raise a callback had recovered
// itself is dropped with it (the goroutine, and so the turn, ends here).
//
//go:noinline
func (e *engine) caught(fl *flow, v any) {
	raisedAt := e.cur
	if raisedAt == nil {
		raisedAt = fl.cur // outside any callback: a sync object's Leave (leftPlainly)
	}
	e.raisedAt = raisedAt
	e.cur = nil
	if e.region != nil {
		e.endRegion()
	}
	// RunReady is over if this is a Goexit: loop callbacks may run flows
	// again (engine.RunReady). driveOn, which follows otherwise, sets it
	// back before anything runs.
	e.running = false
	// Whatever v is, the goroutine may be ending: a deferred call that
	// panics or raises while a runtime.Goexit unwinds the callback's
	// frames gives this recover its value, and the Goexit goes on after
	// it (a recover cannot stop one). So caught leaves nothing the next
	// driving goroutine would take for its own: the label is dropped
	// with this goroutine's labels (exitedInTurn), and the raise is kept
	// aside for driveOn, which follows otherwise, labels the flow again
	// and settles it (left in e.raised, it would fail the next flow's
	// first callback to return).
	if e.label != nil {
		e.switchLabel(nil)
	}
	e.caughtRaise, e.raised = e.raised, raise{}
	e.panicked = v != raiseSignal // set each time: a Goexit's is never read
	if e.panicked {
		e.panicV = v
	}
}
