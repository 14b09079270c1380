package engine

// SetCancel installs the running step's cancel handler (spec 1.3), called
// once if the step is canceled, or before its error handler when an error
// unwinds through it. It disables implicit success. The handler releases
// what the step waits on; it cannot change the step: a call that would
// (Success, Error, Add, ...) is recorded in State().LastException as an
// InternalError *Error that names it, as a panic there is recorded, and is
// otherwise ignored.
func (as *Steps) SetCancel(f CancelFunc) {
	if as.execOnly("SetCancel") {
		as.oncancel = f
		as.flags &^= fFinally | fBare
		as.arm()
	} else if as.isForeign() {
		if b := (*foreignSteps)(as.x).box; b != nil && f != nil {
			// An AddWith step's: its handler sees the bound value too.
			h := f
			f = func(as *Steps) {
				(*foreignSteps)(as.x).box = b
				h(as)
			}
		}
		as.foreign().SetCancel(f)
	}
}

// SetFinally installs f to run once when the running step ends, however
// it ends: when it completes successfully (after its sub-steps), when an
// error unwinds through it (after its error handler, and after the steps
// that handler adds, if any: the handler is part of the step), or when it
// is canceled. It replaces the cancel handler and, unlike SetCancel, keeps
// implicit success. It is an extension to the spec: a lock held for the
// step's sub-steps is released by it, without a step of its own after
// them, and the step's error handler runs inside the lock (spec 2.1:
// sync runs its callbacks in the critical section).
//
// A foreign accessor (NewForeign) has no finally handler in the spec's
// interface: SetFinally there is a misuse (InternalError).
func (as *Steps) SetFinally(f CancelFunc) {
	if as.execOnly("SetFinally") {
		as.oncancel = f
		as.flags = as.flags&^fBare | fFinally
	} else if as.isForeign() {
		foreignMisuse(as, "SetFinally")
	}
}

// runCancel runs f's cancel handler once. A panic in it is recorded in
// LastException and otherwise ignored: cancellation must go on.
func (e *engine) runCancel(f *Steps) {
	h := f.oncancel
	if h == nil || f.flags&fCancelDone != 0 {
		return
	}
	f.flags |= fCancelDone
	f.oncancel = nil
	if v, panicked := e.protectCancel(f, h); panicked {
		f.fl.root.stateForWrite().LastException = &PanicError{Value: v}
	}
}

func (e *engine) protectCancel(f *Steps, h CancelFunc) (v any, panicked bool) {
	saved, savedRunning := e.cur, e.running
	defer func() {
		e.cur, e.running = saved, savedRunning
		e.raised = raise{}
		if panicked {
			v = recover()
		}
	}()
	e.cur = nil      // nothing may be added, succeeded or failed from a cancel handler
	e.running = true // nor may RunReady run flows: the engine is mid-walk (runnow.go)
	panicked = true
	h(f)
	panicked = false
	return
}

// cancelFrame cancels one live frame: its branches, its queued sub-steps, its
// cancel handler. The caller releases it.
func (e *engine) cancelFrame(x *Steps) {
	x.releaseClaim()
	if x.kind == kParallel {
		e.cancelBranches(x)
	}
	e.discardQueued(x)
	e.endStep(x)
}

// cancelBelow cancels and destroys t's live descendants, innermost first,
// without calling their error handlers; t becomes its flow's current frame.
func (e *engine) cancelBelow(t *Steps) {
	fl := t.fl
	e.cancelUpTo(fl.cur, t)
	fl.cur = t
	if t.kind == kParallel {
		e.cancelBranches(t)
	}
}

// cancelUpTo cancels and destroys x and its ancestors, innermost first, up
// to but not including stop.
func (e *engine) cancelUpTo(x, stop *Steps) {
	for x != stop && x != nil {
		p := x.parent
		e.cancelFrame(x)
		e.releaseFrame(x)
		x = p
	}
}

// cancelFlow cancels a branch flow entirely: every live frame from its
// current one up to its top.
func (e *engine) cancelFlow(fl *flow) {
	for x := fl.cur; x != nil; {
		p := x.parent
		last := x == fl.top
		e.cancelFrame(x)
		e.releaseFrame(x)
		if last {
			break
		}
		x = p
	}
	fl.cur = nil
}
