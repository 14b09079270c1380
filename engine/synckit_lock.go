// This file holds the Sync kit's Lock and AddLocked, and the ways a Lock's
// Leave runs when its section's step ends (stepend.go decides when).

package engine

import (
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/cast"
)

// Lock is a Sync object's uncontended path, for AddLocked: one step per
// section, no per-call state. A Sync object keeps one Lock for its whole
// life (usually a field of itself, set up once with Init) and hands it to
// AddLocked from its Sync method.
//
// When the step starts, Enter(as, obj) tries to let the flow in without
// waiting. If it does (true), the section's ExecFunc runs at once as that
// very step's callback, and Leave(as, obj) runs once when the step ends,
// however it ends: success (after its sub-steps), error (after its error
// handler) or cancel; after the step's own cancel or finally handler, and
// whatever the section's callback set with SetCancel or SetFinally. If
// Enter declines (false: the object is full, the flow must queue, it is a
// reentrance, or it must be rejected), Slow(as, obj, f) runs instead as the
// step's callback, exactly as if the step had been added with
// AddWith(as, Slow, obj) and bound to obj: it queues, adds f as a sub-step,
// uses SetFinally, Bound and Rebind as any AddWith step may.
//
// Enter and Leave run on the loop, with the running step's accessor, and
// must not add steps, succeed or fail: Enter only decides, Leave only lets
// go. Both are top-level functions: a Lock holds no closure. Leave must
// not panic: one that does after a section that succeeded fails the flow
// with InternalError there (it runs unprotected, on the step loop's own
// recover); after an error or a cancel the panic is recorded in
// LastException and the flow's own outcome stands.
//
// While an entered section runs (its callback, sub-steps, error handler),
// Holds(obj) reports true for its flow without a Hold: Enter and Leave
// need not record the flow, and a nested Sync on the same object finds it
// there (Enter then usually declines, and Slow passes the reentrance
// through).
type Lock[T any] struct {
	// The layout is lockOps's: AddLocked's step reads it without knowing T.
	obj   *T
	key   any // obj, as Holds compares it
	enter func(as *Steps, obj *T) bool
	leave func(as *Steps, obj *T)
	slow  func(as *Steps, obj *T, f ExecFunc)
}

// lockOps is Lock[T] for any T: a *T and an unsafe.Pointer are both one
// pointer, and a func value is one pointer whichever its type, so the two
// structs have the same layout (pinned by TestLockLayout).
type lockOps struct {
	obj                unsafe.Pointer
	key                any
	enter, leave, slow unsafe.Pointer
}

// Init sets l up for obj. enter, leave and slow must not be nil; Init
// panics naming the missing one, a mistake made outside any flow.
func (l *Lock[T]) Init(obj *T, enter func(as *Steps, obj *T) bool, leave func(as *Steps, obj *T), slow func(as *Steps, obj *T, f ExecFunc)) {
	switch {
	case obj == nil:
		panic("engine: Lock.Init: nil object")
	case enter == nil:
		panic("engine: Lock.Init: nil enter func")
	case leave == nil:
		panic("engine: Lock.Init: nil leave func")
	case slow == nil:
		panic("engine: Lock.Init: nil slow func")
	}
	l.obj, l.key, l.enter, l.leave, l.slow = obj, obj, enter, leave, slow
}

// AddLocked adds the step of one critical section over l (see Lock): f
// runs inside it, and onerror, if not nil, handles errors raised in f or
// its sub-steps, inside the section too. It is what a Sync object's Sync
// method calls; it returns as. l must have been set up with Init.
//
// On a foreign accessor (a flow another engine drives, NewForeign) the
// section is that engine's: when l's object is a Sync, it goes through
// the accessor's own Sync (spec 2.7.3: the other engine's addSync, which
// takes the object through its lock and unlock), as as.Sync(obj, ...)
// does; the Lock's Enter, Leave and Slow, which need our engine's kit
// (SetFinally, Hold, Bound), are not used there.
func AddLocked[T any](as *Steps, l *Lock[T], f ExecFunc, onerror ErrorFunc) *Steps {
	return addLocked(as, (*lockOps)(unsafe.Pointer(l)), f, onerror)
}

// addLocked is AddLocked for any T: the generic part is one call, which
// inlines into the object's Sync (and a Sync called directly, as stepsd
// calls its Limiter's, into its caller): a generic function with a
// branch of its own did not inline, and cost each section a call.
func addLocked(as *Steps, l *lockOps, f ExecFunc, onerror ErrorFunc) *Steps {
	if as == nil {
		return nil
	}
	if l == nil || l.obj == nil {
		misuse(as, "AddLocked: Lock not set up with Init")
		return as
	}
	if f == nil {
		misuse(as, "AddLocked: nil ExecFunc")
		return as
	}
	if as.kind == kForeign {
		addLockedForeign(as, l, f, onerror)
		return as
	}
	if c := as.addFrame(kStep, "AddLocked"); c != nil {
		c.fn = callLocked
		c.xfn = cast.FuncPtr(f)
		c.x = unsafe.Pointer(l)
		c.onerr = onerror
	}
	return as
}

// addLockedForeign is AddLocked on a foreign accessor: the other engine's
// Sync over l's object. A Lock whose object is not a Sync has no section
// the other engine can take: a misuse.
//
//go:noinline
func addLockedForeign(as *Steps, l *lockOps, f ExecFunc, onerror ErrorFunc) {
	if obj, ok := l.key.(Sync); ok {
		as.foreign().Sync(obj, f, onerror)
		return
	}
	misuse(as, "AddLocked: on a foreign accessor the Lock's object must be an engine.Sync (the other engine's addSync takes it)")
}

// callLocked is the ExecFunc of every AddLocked step, with the section's f
// in xfn and the *Lock in x. Entered, the step becomes f's own step (fn =
// f, so the async stack and Bound see a plain step) and keeps the Lock in
// x for endStep, flagged fLocked. Declined, it becomes an AddWith step of
// Slow bound to the object.
func callLocked(as *Steps) {
	l := (*lockOps)(as.x)
	f := cast.Func[ExecFunc](as.xfn)
	if cast.Func[func(*Steps, unsafe.Pointer) bool](l.enter)(as, l.obj) {
		as.flags |= fLocked
		as.fl.locked++
		as.fn, as.xfn = f, nil
		f(as)
		return
	}
	as.fn, as.xfn, as.x = callBound, l.slow, l.obj
	cast.Func[func(*Steps, unsafe.Pointer, ExecFunc)](l.slow)(as, l.obj, f)
}

// leftPlainly lets advanceFast take an entered AddLocked section that
// ended as a plain step would (no sub-steps, nothing armed, no cancel or
// finally handler, not the flow's top): its Leave runs, and it reports
// true. Anything else it leaves alone, reporting false. Plain steps never
// call it: advanceFast asks only when its own test failed on a step that
// has fLocked set.
func (e *engine) leftPlainly(fl *flow, f *Steps) bool {
	// No look at oncancel, as in advanceFast: a cancel or finally handler
	// comes with fArmed or fFinally, which fail the flags test.
	if f.flags&^(plainDone|fLocked) != 0 || f.qlast != nil || f == fl.top {
		return false
	}
	// leaveCompleted written out: one call less per section.
	f.flags &^= fLocked
	fl.locked--
	f.onerr = nil
	l := (*lockOps)(f.x)
	cast.Func[func(*Steps, unsafe.Pointer)](l.leave)(f, l.obj)
	return true
}

// leaveCompleted calls the Leave of f's Lock when f completed successfully.
// Unprotected, unlike leaveLock: the step loop runs under drive1's recover,
// which fails the flow at its current frame, f, with an InternalError if
// Leave panics. f's own error handler is spent first: the section is over.
func (e *engine) leaveCompleted(f *Steps) {
	f.flags &^= fLocked
	f.fl.locked--
	f.onerr = nil
	l := (*lockOps)(f.x)
	cast.Func[func(*Steps, unsafe.Pointer)](l.leave)(f, l.obj)
}

// leaveLock calls the Leave of f's Lock when f ended by an error or was
// canceled. Like a cancel handler it runs with nothing current (it may not
// add steps), and a panic in it is recorded in LastException and otherwise
// ignored: the flow's own outcome stands, and cancellation must go on.
func (e *engine) leaveLock(f *Steps) {
	l := (*lockOps)(f.x)
	saved, savedRunning := e.cur, e.running
	panicked := true
	defer func() {
		e.cur, e.running = saved, savedRunning
		if panicked {
			e.raised = raise{}
			f.fl.root.stateForWrite().LastException = &PanicError{Value: recover()}
		}
	}()
	e.cur = nil
	e.running = true // no RunReady mid-walk, as in a cancel handler (protectCancel)
	cast.Func[func(*Steps, unsafe.Pointer)](l.leave)(f, l.obj)
	panicked = false
}

// lockedBy reports whether f or a step below it in its flow is an entered
// AddLocked section over key (see Lock: Holds without Hold).
func (f *Steps) lockedBy(key any) bool {
	top := f.fl.top
	for x := f; x != nil; x = x.parent {
		if x.flags&fLocked != 0 && (*lockOps)(x.x).key == key {
			return true
		}
		if x == top {
			break
		}
	}
	return false
}

// Wait, called by l's Slow on its own step (the step AddLocked added, whose
// Enter declined), makes that step wait, as External does, and returns the
// External that lets it in. When that External passes (Pass, or Success:
// the values become the section's arguments), the step does not complete:
// it runs again as the entered section, exactly as if Enter had let it in
// at first: f runs as its callback, Holds(obj) is true inside, the step's
// error handler is the section's, and Leave(as, obj) runs once when it
// ends, however it ends. An Error through the External fails the step
// instead, as any External's does.
//
// It is how a queued flow is handed a Lock's object straight into its
// section, with no step of its own for the wait and none for the section:
// the releasing side passes the waiter's External (from any goroutine), and
// the waiter's loop runs the section next. Until the pass the step is a
// waiting step: a cancel handler the Slow set with SetCancel runs if the
// flow is canceled or times out while it waits, and must take the flow out
// of the object's queue (or, where the object lets waiters in by other
// means than this External, give back what it was let into). From the
// pass, applied on the loop, the step holds the object: that handler is
// dropped, as is a timeout the Slow set with SetTimeout (it limited the
// wait; the section runs without it), and Leave is the step's only exit, even for a Cancel that comes
// before the section starts (the section then never runs). Bound keeps
// returning the value bound (or Rebound) to the step while it waits.
// Sub-steps the Slow adds after Wait disarm its External, as they disarm
// any External: the step then ends with them, and f never runs.
//
// Misuse (an InternalError for the step): calling Wait outside l's Slow
// step, after the Slow added sub-steps, or passing the External (or
// calling Success on the step) inside the Slow's own callback (an object
// that can let the flow in at once should add f there instead of
// waiting).
func (l *Lock[T]) Wait(as *Steps, f ExecFunc) External {
	if !as.execOnly("Lock.Wait") {
		return External{}
	}
	switch {
	case f == nil:
		misuse(as, "Lock.Wait: nil ExecFunc")
		return External{}
	case as.xfn == nil || as.xfn != cast.FuncPtr(l.slow):
		misuse(as, "Lock.Wait: not called by the Lock's Slow on its own step")
		return External{}
	case as.qlast != nil:
		misuse(as, "Lock.Wait: the step already added sub-steps")
		return External{}
	}
	as.flags |= fWait | fRelock
	g := as.arm()
	// While the step waits its callback is done: fn keeps the section
	// and xfn the Lock (non-nil, so Bound still returns x, the Slow's
	// binding) until relock installs them.
	as.fn = f
	as.xfn = unsafe.Pointer(l)
	return External{f: as, gen: g}
}

// WaitBound is l.Wait(as, f) that also rebinds the waiting step to v (as
// Rebind: Bound returns v in its cancel handler) and sets its cancel
// handler (as SetCancel), in one call: the queued path of a Sync object
// that keeps its waiter outside the step (a node the object owns) and so
// needs no Stack record, made with one check of the running step instead
// of three. v and oncancel are dropped with the rest of the wait when the
// External passes (see Lock.Wait); v must not be nil (a misuse, as
// Wait's), oncancel may be. On a foreign accessor it is a misuse: Lock's
// Slow never runs there (AddLocked goes through the other engine's Sync).
func WaitBound[T, V any](as *Steps, l *Lock[T], f ExecFunc, v *V, oncancel CancelFunc) External {
	if v == nil {
		misuse(as, "WaitBound: nil binding")
		return External{}
	}
	x := l.Wait(as, f)
	if x.f != nil {
		// Wait checked the step and armed it: what SetCancel and Rebind
		// would check again holds. SetCancel's own arm is Wait's.
		as.oncancel = oncancel
		as.flags &^= fFinally
		as.x = unsafe.Pointer(v)
	}
	return x
}

// relock turns f, a Lock.Wait step whose External passed, into its entered
// section (see Lock.Wait): the next exec runs the section's ExecFunc (kept
// in fn) as the step's callback, with the Lock in x for Leave and Holds.
// What the wait armed is spent: the External passed (ctl is back at xNone),
// the cancel handler that would have unqueued the flow is dropped, and so
// is a timeout the Slow set for the wait.
func (e *engine) relock(f *Steps) {
	if f.timed() {
		// A timeout the Slow set (SetTimeout) limited the wait, and is
		// spent with it: fTimeout goes below, and the section's end
		// releases the frame as a plain step's (releasePlain), which
		// stops no timer; one left armed would fail whatever step has
		// the frame by then.
		e.r.Stop(f.timer())
		f.tidx, f.tgen = 0, 0
	}
	f.flags = f.flags&fBuilt | fLocked
	f.fl.locked++
	f.oncancel = nil
	f.x, f.xfn = f.xfn, nil
}
