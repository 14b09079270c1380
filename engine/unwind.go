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
