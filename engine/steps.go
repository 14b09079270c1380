package engine

import (
	"sync/atomic"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/arena"
	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// ExecFunc is a step: FTN12's execute_callback. The previous step's success
// values are in as.Args().
type ExecFunc func(as *Steps)

// ErrorFunc is a step's error handler: FTN12's error_callback.
type ErrorFunc func(as *Steps, code string)

// CancelFunc is a step's cancel handler: FTN12's cancel_callback.
type CancelFunc func(as *Steps)

// Steps is an AsyncSteps object: a root (from New or NewInstance), or the
// accessor a callback receives for its own step, or the accessor Parallel
// returns.
//
// Accessors are pooled. The *Steps a callback receives is valid while its
// step is alive: until the step completes, fails or is canceled. After that
// Valid reports false and every call on it is a misuse, until the engine
// reuses its memory for another step; so never keep an accessor past its
// step. Use External to finish a step later, from anywhere.
type Steps struct {
	// ctl is gen<<xBits | x-state: the only word shared with other
	// goroutines, and touched only when External is used. External()
	// bumps gen and arms the step; a stale External (holding an older gen)
	// never matches. It is only ever accessed atomically; every other field
	// is owned by the loop, or by the goroutine building a root that has
	// not been executed.
	ctl atomic.Uint64

	// The small fields sit beside ctl, so that an External's completion
	// on the loop (ctl, e, fl, st, flags) reads the frame's first cache
	// line only, after a round over many parked flows has evicted it
	// (the ParallelWaitLoop row).
	//
	// tidx and tgen are the parts of the step's SetTimeout timer
	// (reactor.X.TimerParts; tidx 0: none), kept apart so that the
	// frame is 128 bytes: a reactor.Timer is 16 (a uint32 and a uint64),
	// and 136 bytes took the 144-byte size class, where a frame spans
	// three cache lines wherever it lies; at 128 the class aligns it to
	// two (frame_layout_test.go). Read them through timed and timer.
	tidx  uint32
	kind  uint8
	st    uint8 // status; loop-owned, so no atomic on the step path
	flags uint16

	e      *engine // fixed for the life of the memory
	fl     *flow   // the flow this step runs in
	parent *Steps  // the step whose execution added this one, the root, or the parallel step of a branch
	// next: the next sibling in parent's queue (see qlast); the free-list
	// link when free; a loop iteration's kept frames (keep). A waiting
	// kStep's next is otherwise stale (dequeue), and may hold parked's
	// hint (engine.go): the step that parked parkAhead after it, read by
	// External.Success as an address to prefetch, never as a link.
	next *Steps

	// qlast: the sub-steps added but not yet started, in order (for a
	// parallel step before it starts: its branches), as one pointer: a
	// circular list through next held by its LAST frame, so qlast.next is
	// the first (enqueue, dequeue; nil: none). One word where a head and a
	// tail took two, so that with fn it fits the first line: a step added
	// by Add (fBare) is run, completed and kept, or taken again, reading
	// and writing that line only, and so is the loop iteration that adds
	// it (its kept frames are in next: keep). Most readers only test
	// qlast != nil (sub-steps queued); only enqueue, dequeue and
	// queueFirst/queueAfter follow the list, and nothing else may: the
	// first frame is qlast.next, never qlast.
	qlast *Steps
	fn    ExecFunc // the callback; a Loop's iteration (kBody) holds the loop's body here (loopNext)

	onerr    ErrorFunc
	oncancel CancelFunc
	tgen     uint64         // see tidx
	scope    arena.Scope    // Stack[T] memory and per-kind state, freed with the step
	x        unsafe.Pointer // per-kind: *loopState, *Args of SuccessStep, first branch *flow of a running parallel, AddWith's *T, a foreign accessor's *foreignSteps
	bin      unsafe.Pointer // a bridge's binding (binary.go): released through Bridge.Release when the step is destroyed
	xfn      unsafe.Pointer // AddWith: the user's func(*Steps, *T), called by fn

	// A free word: the frame stays 128 bytes (frame_layout_test.go), so
	// that root, which embeds a Steps, keeps its layout (root_alloc_test.go).
	_ uintptr
}

// Frame statuses.
const (
	stFree    = iota // in a free list
	stQueued         // added, not started
	stRunning        // its callback or error handler is running, or it completed and waits to be advanced
	stActive         // its sub-steps are running
	stWaiting        // its callback returned and it waits for Success/Error/timeout
	stIdle           // a root that is not executing
)

// External states (the low bits of ctl).
const (
	xNone    = iota // no External can finish the step
	xArmed          // External() was called: a result may arrive
	xWriting        // an External on another goroutine is writing the result: the loop neither reads nor recycles the frame meanwhile
	xClaimed        // that result is written and posted to the loop
	xBits    = 2
	xMask    = 1<<xBits - 1
)

// Frame kinds.
const (
	kStep     = iota // a user step
	kRoot            // a root: its children are level 0
	kParallel        // children (qlast's queue) are branches
	kLoop            // Loop, Repeat, ForEach: children are iterations
	kBody            // one iteration of the parent loop
	kSuccess         // SuccessStep: succeeds with *Args in x
	kForeign         // an accessor of another implementation's flow (NewForeign): never a frame
)

// Frame flags.
const (
	fWait       = 1 << iota // WaitExternal or External was called
	fTimeout                // SetTimeout was called
	fSucceeded              // Success was called by the running callback
	fHandler                // its error handler is running (the accessor is in handler mode)
	fCancelDone             // its cancel handler already ran
	fBuilt                  // taken while building a root off the loop
	fArmed                  // an External is armed for this step (External, WaitExternal, SetTimeout, SetCancel)
	fForward                // ForwardArgs: the first sub-step gets this step's own values
	fFinally                // oncancel was set by SetFinally: it also runs on success
	fLocked                 // an AddLocked step that entered its Lock (x): endStep calls its Leave
	fYield                  // its callback or error handler canceled its own root: the flow stops after it (yieldCanceled)
	fRelock                 // a Lock's Slow step waiting in Lock.Wait: a pass enters its section (relock) instead of completing it

	// fBare: a step Add gave its fn and nothing else (Add's running-step
	// path), so onerr, oncancel, scope, bin, x and xfn are all nil while
	// it is set: the tests of a step that ended (advanceFast, advance,
	// keepable) read it in the frame's first line instead of those six
	// fields in the second, a miss each in a round over many parked flows
	// (the ParallelWaitLoop row). Whatever may set one of them on the
	// running step clears it first (SetCancel, SetFinally, Stack, allocFor,
	// the bridge's xBind); the rest (AddWith, AddLocked, Lock.Wait,
	// Rebind, a binding's Add, CopyFrom) act on frames Add did not flag.
	// False is always safe: it only costs the look at the second line.
	// Every mask of "nothing else set" lists it (plainDone, advanceFast's,
	// chainable's, reuseIteration's). A loop iteration (kBody) carries it
	// too from loopNext and each reuse on (its kept frames are in next,
	// not x; nothing but those clearers writes the six fields of an
	// iteration frame: AddWith, AddLocked, Lock.Wait and Rebind need a
	// step's xfn), so that reuseIteration and advanceFast decide a reuse
	// from the first line.
	fBare
)

// current reports whether as is the step whose callback is running; if not,
// the call is a misuse (see misuse) and current returns false.
func (as *Steps) current(op string) bool {
	if as == nil {
		return false
	}
	if as.e.r.IsSameThread() && as.e.cur == as {
		if as.e.chaining {
			return as.afterChain(op)
		}
		return true
	}
	if as.kind == kForeign {
		return false // the caller forwards
	}
	misuse(as, op+": not called on the running step's accessor (kept past its step, or called outside its callback)")
	return false
}

// afterChain is current for a step that runs a chain (chain.go): its
// callback has returned, so the bridge enters the chain's step first.
//
//go:noinline
func (as *Steps) afterChain(op string) bool {
	as.e.leaveChain()
	return as.current(op)
}

// misuse reports a violation of the API (spec 2.1: reported as InternalError).
// With a callback running on this goroutine's loop, the running step fails
// with InternalError and misuse does not return. Otherwise there is no step
// to fail right now: a misuse while building a root fails that root when it
// is executed; anything else (an accessor used off the loop, whose memory
// may belong to another flow by now) is dropped.
func misuse(as *Steps, info string) {
	if as == nil || as.e == nil {
		return
	}
	checkReleased(as, info)
	if as.e.chaining && as.e.r.IsSameThread() {
		as.e.leaveChain() // the misuse fails the chain's step
	}
	if as.kind == kForeign {
		as.foreign().Error(InternalError, info)
		return
	}
	e := as.e
	if e.r.IsSameThread() && e.cur != nil {
		e.raiseError(e.cur, InternalError, info)
		panic(raiseSignal)
	}
	if as.kind == kStep && as.flags&fCancelDone != 0 && as.fl != nil && e.r.IsSameThread() {
		// From a cancel or finally handler (runCancel: e.cur is nil
		// there), on a step whose frame is not released yet: the flow
		// takes no outcome now, but the mistake is recorded, as a panic
		// there is, instead of vanishing.
		as.fl.root.stateForWrite().LastException = &Error{Code: InternalError, Info: "in a cancel or finally handler: " + info}
		return
	}
	switch {
	case as.kind == kRoot:
		if rt := rootOf(as); !rt.running() && !rt.isReleased() {
			rt.setMisuse(info)
		}
	case as.kind == kParallel && as.parent != nil && as.parent.kind == kRoot:
		if rt := rootOf(as.parent); !rt.running() && !rt.isReleased() {
			rt.setMisuse(info)
		}
	}
	// Anything else is an accessor used off the loop: its memory may
	// belong to another flow by now, so nothing is failed.
}

// addFrame adds a sub-step of the given kind to as, checking that as may take
// one: the running step (or the step whose error handler runs), a root that
// is not executing, or a parallel step that has not started yet, through
// one of those. It returns nil after a misuse that did not unwind.
func (as *Steps) addFrame(kind uint8, op string) *Steps {
	e := as.e
	switch {
	case as.kind == kRoot:
		// Checked first: a root is built off the loop, where e.cur must not be read.
		rt := rootOf(as)
		if rt.running() || rt.isReleased() {
			break
		}
		c := rt.buildFrame(kind, as)
		as.enqueue(c)
		return c
	case as.kind == kParallel && as.parent != nil && as.parent.kind == kRoot && !rootOf(as.parent).running():
		// A level-0 parallel step of a root being built, possibly off the
		// loop: e.cur must not be read here.
		if rt := rootOf(as.parent); branchKind(kind) && as.st == stQueued && !rt.isReleased() {
			c := rt.buildFrame(kind, as)
			as.enqueue(c)
			return c
		}
	case !e.r.IsSameThread():
		// Off the loop only a root being built may take steps (above).
		if as.kind == kForeign {
			return nil // the caller forwards
		}
	case as == e.cur:
		if as.flags&fSucceeded != 0 {
			misuse(as, op+": called after Success")
			return nil
		}
		var c *Steps
		if as.kind == kBody && as.next != nil {
			c = as.takeKeptOut(kind)
		} else {
			c = e.newFrame(kind, as, as.fl)
		}
		as.enqueue(c)
		return c
	case as.kind == kParallel && as.st == stQueued && branchKind(kind):
		if p := as.parent; p == e.cur {
			c := e.newFrame(kind, as, as.fl)
			as.enqueue(c)
			return c
		}
	}
	misuse(as, op+": through an accessor that is not the running step's")
	return nil
}

// branchKind reports whether a frame of kind may be a branch of a
// parallel step: a step (Add, Sync) or a loop (Loop, Repeat, ForEach), which
// runs as one more branch, as in the C++ reference.
func branchKind(kind uint8) bool { return kind == kStep || kind == kLoop }

// Add adds a step (spec 2.2.1): f runs after the steps added before it, with
// the values the previous step succeeded with; onerror, if given and not
// nil, handles errors raised in f or its sub-steps. Called on a root that is
// not executing it builds level 0; called on the running step's accessor it
// adds sub-steps. It returns as, for chaining.
func (as *Steps) Add(f ExecFunc, onerror ...ErrorFunc) *Steps {
	checkReleased(as, "Add")
	if as == nil || f == nil || len(onerror) != 0 {
		if len(onerror) == 1 && as != nil && f != nil && as.kind == kRoot {
			return as.addRootOnError(f, onerror)
		}
		return as.addSlow(f, onerror)
	}
	// From here on onerror is empty: the fallbacks below pass nil, so that
	// its three words are not kept (spilled) across the goroutine check.
	if as.kind != kRoot {
		// The running step adding a plain sub-step (a loop body building
		// its iteration): addFrame's case for e.cur, without its walk
		// over the other cases and addSlow's checks. The loop is checked
		// first: e.cur is the loop's, and only the loop may read it. The
		// goroutine is read before anything else is loaded (IsLoopG).
		g := goid.Current()
		if e := as.e; reactor.X.IsLoopG(e.r, g) && as == e.cur && as.flags&fSucceeded == 0 {
			c := as.takeKept(kStep)
			if c == nil {
				c = e.newFrame(kStep, as, as.fl)
			}
			c.fn = f
			c.flags = fBare // kept and free frames carry flags 0 and nil extras
			as.enqueue(c)
			return as
		}
		return as.addSlow(f, nil)
	}
	// A plain step added to a root being built that has a spare frame
	// (every re-executed root): buildFrame's spare case without addFrame's
	// checks. The run word first: spare is the loop's while the root runs,
	// and only a run word seen clear orders the loop's last writes to it
	// before this read (an Add on an executing root is a misuse, made from
	// any goroutine).
	rt := rootOf(as)
	if rt.run.Load()&runActive != 0 || rt.isReleased() {
		return as.addSlow(f, nil)
	}
	// popSpare without its clear of c.next: enqueue below writes it
	// (a pointer store and its write-barrier test fewer).
	c := rt.spare
	if c == nil {
		return as.addSlow(f, nil)
	}
	rt.spare = c.next
	rt.spareN--
	rt.markBuilt(c, kStep, as)
	// fBare: a spare frame's second line is empty (toSpare, reset, fresh
	// chunks) and this step is given its fn alone, as Add's running-step
	// path gives one: the step's end (advanceFast, toSpare) then reads and
	// writes its first line only (FanOut: the frame, a spare released a
	// thousand flows earlier, missed once more on its second).
	c.flags = fBuilt | fBare
	c.fn = f
	as.enqueue(c)
	return as
}

// addRootOnError is Add for a step with one error handler on a root being
// built that has a spare frame (a pooled root run again, as stepsd's read
// flows are, each starting with such a step): the plain step's short path
// below Add's goroutine check, with the handler, rather than addSlow's
// checks and addFrame's walk (59 instructions a root,
// profiles/notes/2026-11-27-srv-round7.md). Anything else goes to addSlow.
func (as *Steps) addRootOnError(f ExecFunc, onerror []ErrorFunc) *Steps {
	rt := rootOf(as)
	if rt.run.Load()&runActive != 0 || rt.isReleased() {
		return as.addSlow(f, onerror)
	}
	c := rt.popSpare()
	if c == nil {
		return as.addSlow(f, onerror)
	}
	rt.markBuilt(c, kStep, as)
	c.fn = f
	c.onerr = onerror[0]
	as.enqueue(c)
	return as
}

// addSlow is Add with its argument checks: a nil accessor, a nil f, error handlers.
func (as *Steps) addSlow(f ExecFunc, onerror []ErrorFunc) *Steps {
	if as == nil {
		return nil
	}
	if f == nil {
		misuse(as, "Add: nil ExecFunc")
		return as
	}
	if len(onerror) > 1 {
		misuse(as, "Add: more than one ErrorFunc")
		return as
	}
	if c := as.addFrame(kStep, "Add"); c != nil {
		c.fn = f
		if len(onerror) == 1 {
			c.onerr = onerror[0]
		}
	} else if as.kind == kForeign {
		as.foreign().Add(f, optErr(onerror))
	}
	return as
}

// optErr returns the optional ErrorFunc, or nil.
func optErr(onerror []ErrorFunc) ErrorFunc {
	if len(onerror) == 1 {
		return onerror[0]
	}
	return nil
}

// Parallel adds a parallel step and returns its accessor (spec 1.4): each
// Add, Sync, Loop, Repeat or ForEach on that accessor becomes a branch
// (a loop runs as one branch, as in the C++ reference); all branches start
// together and the step succeeds, with no values, when all have; if one
// fails, the others are canceled and onerror (if any) handles the error.
func (as *Steps) Parallel(onerror ...ErrorFunc) *Steps {
	checkReleased(as, "Parallel")
	if as == nil {
		return nil
	}
	if len(onerror) > 1 {
		misuse(as, "Parallel: more than one ErrorFunc")
		return as
	}
	c := as.addFrame(kParallel, "Parallel")
	if c == nil {
		if as.kind == kForeign {
			return as.foreign().Parallel(optErr(onerror))
		}
		return as
	}
	if len(onerror) == 1 {
		c.onerr = onerror[0]
	}
	return c
}

// Sync adds a step synchronized against obj (spec 1.11): it calls
// obj.Sync(as, f, onerror) at once, and obj adds the steps that wait,
// enter and leave.
func (as *Steps) Sync(obj Sync, f ExecFunc, onerror ...ErrorFunc) *Steps {
	checkReleased(as, "Sync")
	if as == nil {
		return nil
	}
	if obj == nil {
		misuse(as, "Sync: nil Sync object")
		return as
	}
	if len(onerror) > 1 {
		misuse(as, "Sync: more than one ErrorFunc")
		return as
	}
	if as.kind == kForeign {
		as.foreign().Sync(obj, f, optErr(onerror))
		return as
	}
	obj.Sync(as, f, optErr(onerror))
	return as
}

// Sync is FTN12's ISync (spec 2.1): what Steps.Sync calls.
type Sync interface {
	Sync(as *Steps, f ExecFunc, onerror ErrorFunc)
}

// SuccessStep adds a step that succeeds with args (spec 1.12).
func (as *Steps) SuccessStep(args ...Value) *Steps {
	checkReleased(as, "SuccessStep")
	if as == nil {
		return nil
	}
	if len(args) > MaxArgs {
		misuse(as, "SuccessStep: more than 4 values")
		return as
	}
	if c := as.addFrame(kSuccess, "SuccessStep"); c != nil {
		a := allocFor[Args](c)
		a.set(args)
		for i := range a.v {
			a.v[i].meta &^= metaOwned // a copy: the flow's arguments own the original
		}
		c.x = unsafe.Pointer(a)
	} else if as.kind == kForeign {
		vals := append([]Value(nil), args...)
		as.foreign().Add(func(as *Steps) { as.Success(vals...) }, nil)
	}
	return as
}

// State returns the flow's state: one *State per root. Nil for a nil accessor.
func (as *Steps) State() *State {
	checkReleased(as, "State")
	if rt := as.builtRoot(); rt != nil {
		return rt.stateForWrite()
	}
	if as == nil || as.fl == nil {
		if as.isForeign() {
			return as.foreign().State()
		}
		return nil
	}
	return as.fl.root.stateForWrite()
}

// Get returns State().Get(key).
func (as *Steps) Get(key string) any { return as.State().Get(key) }

// Set is State().Set(key, v).
func (as *Steps) Set(key string, v any) { as.State().Set(key, v) }

// Exists returns State().Exists(key).
func (as *Steps) Exists(key string) bool { return as.State().Exists(key) }

// Unset is State().Unset(key).
func (as *Steps) Unset(key string) { as.State().Unset(key) }

// CopyFrom copies the steps of model, a root that is not executing, into as,
// and the state values model has that as lacks (spec 1.5). as is the running
// step or a root that is not executing. It returns as.
func (as *Steps) CopyFrom(model *Steps) *Steps {
	checkReleased(as, "CopyFrom")
	if as == nil {
		return nil
	}
	if model == nil || model.kind != kRoot || rootOf(model).running() {
		misuse(as, "CopyFrom: the model must be a root that is not executing")
		return as
	}
	for s := model.queueFirst(); s != nil; s = model.queueAfter(s) {
		if !as.copyStep(s) {
			return as
		}
	}
	if st := as.State(); st != model.State() {
		st.copyMissing(model.State())
	}
	return as
}

// copyStep adds to as a copy of the queued step s.
func (as *Steps) copyStep(s *Steps) bool {
	c := as.addFrame(s.kind, "CopyFrom")
	if c == nil {
		return false
	}
	c.fn, c.onerr, c.xfn = s.fn, s.onerr, s.xfn
	if s.kind == kStep {
		c.x = s.x
	}
	if s.bin != nil && bridge.Copy != nil {
		c.bin = bridge.Copy(s.bin, c)
	}
	switch s.kind {
	case kParallel:
		for b := s.queueFirst(); b != nil; b = s.queueAfter(b) {
			if !c.copyStep(b) {
				return false
			}
		}
	case kLoop:
		ls := allocFor[loopState](c)
		*ls = *s.loop()
		ls.i = 0
		c.x = unsafe.Pointer(ls)
	case kSuccess:
		a := allocFor[Args](c)
		*a = *(*Args)(s.x)
		c.x = unsafe.Pointer(a)
	}
	return true
}

// Clone returns a new root on the same reactor with copies of this root's
// steps and state values.
func (as *Steps) Clone() *Steps {
	checkReleased(as, "Clone")
	if as == nil {
		return nil
	}
	if as.kind != kRoot {
		if as.kind == kForeign {
			return as.foreign().NewInstance() // steps of another engine cannot be copied
		}
		misuse(as, "Clone: not a root")
		return nil
	}
	c := New(as.e.r)
	c.CopyFrom(as)
	return c
}

// NewInstance returns a new root on the same reactor (spec 2.2.1).
func (as *Steps) NewInstance() *Steps {
	checkReleased(as, "NewInstance")
	if as == nil {
		return nil
	}
	if as.kind == kForeign {
		return as.foreign().NewInstance()
	}
	return New(as.e.r)
}

// Reactor returns the reactor the flow runs on (for a foreign accessor,
// the one its engine maps to, or nil).
func (as *Steps) Reactor() *reactor.Reactor {
	if as == nil {
		return nil
	}
	if as.kind == kForeign {
		return as.foreign().Reactor()
	}
	return as.e.r
}

// Valid is the spec's boolean cast: false for nil, for a released root and
// for an accessor whose step has ended (until its memory is reused).
func (as *Steps) Valid() bool {
	checkReleased(as, "Valid")
	if as == nil || as.e == nil {
		return false
	}
	switch as.kind {
	case kRoot:
		return !rootOf(as).isReleased()
	case kForeign:
		return as.foreign().Valid()
	}
	return as.status() != stFree
}

// RootID identifies the flow as runs in: unique among live roots and
// parallel branches.
func (as *Steps) RootID() uintptr {
	checkReleased(as, "RootID")
	if as == nil {
		return 0
	}
	if as.kind == kForeign {
		return as.foreign().RootID()
	}
	if rt := as.builtRoot(); rt != nil {
		return uintptr(unsafe.Pointer(rt))
	}
	if as.fl == nil {
		return 0
	}
	if as.fl.par == nil {
		// A root's flow is pooled, so the root itself names it: the same
		// value from the root and from any of its steps, run after run.
		return uintptr(unsafe.Pointer(as.fl.root))
	}
	return uintptr(unsafe.Pointer(as.fl))
}

// builtRoot returns the root of an accessor that may have no flow: the
// root itself (its flow is attached only while it runs), or a parallel
// step added to it and not started. Nil for anything else.
func (as *Steps) builtRoot() *root {
	switch {
	case as == nil || as.e == nil:
		return nil
	case as.kind == kRoot:
		return rootOf(as)
	case as.fl == nil && as.parent != nil && as.parent.kind == kRoot:
		return rootOf(as.parent)
	}
	return nil
}

// Success completes the running step with up to four values for the next
// step (spec 2.2.2). A step that added sub-steps must not call it, nor call
// it twice; a parallel step's accessor takes no values. Called on a step
// that waits (after WaitExternal, SetTimeout or SetCancel) outside its
// callback, it acts as External().Success; prefer External, which cannot
// be confused by a reused accessor.
func (as *Steps) Success(args ...Value) {
	if as == nil {
		return
	}
	if !as.e.r.IsSameThread() || as.e.cur != as {
		if as.kind == kForeign {
			if len(args) > MaxArgs {
				misuse(as, "Success: more than 4 values")
				return
			}
			forwardSuccess(as.foreign(), args)
			return
		}
		if g := as.ctl.Load(); g&xMask == xArmed {
			External{f: as, gen: g >> xBits}.Success(args...)
			return
		}
		as.current("Success") // not waiting: a misuse (dropped outside any flow, like a stale External)
		return
	}
	switch {
	case len(args) > MaxArgs:
		misuse(as, "Success: more than 4 values")
	case as.flags&(fSucceeded|fRelock) != 0: // one test for both on the common path
		if as.flags&fSucceeded != 0 {
			misuse(as, "Success: called twice")
		}
		// A Lock's Slow that waits in Lock.Wait: its step completing
		// now would drop the section (the External's pass would find
		// it gone), as passing the External here would.
		misuse(as, "Lock.Wait: Success on the waiting step inside its Slow")
	case as.qlast != nil:
		misuse(as, "Success: called after sub-steps were added")
	case as.kind == kParallel && len(args) > 0:
		misuse(as, "Success: a parallel step takes no values")
	}
	fl := as.fl
	if fl.owned {
		fl.dropArgs(args)
	}
	switch len(args) {
	case 1:
		fl.setArg1(args[0])
	case 2:
		fl.args.set2(args[0], args[1])
		fl.narrow = false
	default:
		fl.args.set(args)
		fl.narrow = false
	}
	as.flags |= fSucceeded
}

// Error fails the running step with code (spec 2.2.2); info becomes
// State().ErrorInfo. It never returns: it unwinds to the engine, which calls
// the error handlers. Called on a waiting step outside its callback it acts
// as External().Error and returns. An empty code is InternalError, as for
// External.Error.
func (as *Steps) Error(code string, info ...string) {
	if as == nil {
		return
	}
	var inf string
	if len(info) > 0 {
		inf = info[0]
	}
	if code == "" {
		// An empty code reads as no error at the flow's end: the
		// flow succeeded. It is a mistake, failed as External.Error
		// fails it; before the branches, so that a foreign engine
		// never gets the empty code either.
		code, inf = emptyCode(inf)
	}
	e := as.e
	if !e.r.IsSameThread() || e.cur != as {
		if as.kind == kForeign {
			as.foreign().Error(code, inf)
			panic(xForeignUnwind)
		}
		if g := as.ctl.Load(); g&xMask == xArmed {
			External{f: as, gen: g >> xBits}.Error(code, info...)
			return
		}
		as.current("Error")
		return
	}
	e.raiseError(as, code, inf)
	panic(raiseSignal)
}

// emptyCode is Error's code and info for a call with an empty code:
// InternalError, with the info given, or one that names the mistake.
//
//go:noinline
func emptyCode(info string) (string, string) {
	if info == "" {
		info = "Error: called with an empty code"
	}
	return InternalError, info
}

// execOnly checks a call that only a running step's callback may make.
func (as *Steps) execOnly(op string) bool {
	if !as.current(op) {
		return false
	}
	if as.flags&fHandler != 0 {
		misuse(as, op+": not allowed in an error handler")
		return false
	}
	return true
}

// WaitExternal disables implicit success (spec 1.6): the step waits for
// Success or Error from outside its callback, on this accessor or on the
// External that External() returns (the safer handle: it is
// generation-checked).
func (as *Steps) WaitExternal() {
	if as.execOnly("WaitExternal") {
		as.flags |= fWait
		as.arm()
	} else if as.isForeign() {
		as.foreign().WaitExternal()
	}
}

// arm lets a step that will wait be finished through its accessor once its
// callback has returned, as the docs of Success and Error promise: an
// External is armed for it (the one External() returns). Sub-steps added
// later disarm it, as they disarm any External of the step.
func (as *Steps) arm() uint64 {
	c := as.ctl.Load()
	if as.flags&fArmed != 0 {
		return c >> xBits
	}
	as.flags |= fArmed
	g := c>>xBits + 1
	as.ctl.Store(g<<xBits | xArmed)
	return g
}

// External is WaitExternal plus a handle that finishes this step later, from
// any goroutine, even before this callback returns. Calling it again in the
// same step returns the same handle.
func (as *Steps) External() External {
	g := goid.Current() // first: nothing loaded yet is kept across it (IsLoopG)
	if as != nil && reactor.X.IsLoopG(as.e.r, g) && as.e.cur == as && as.flags&fHandler == 0 {
		// execOnly's answer for the running step, without its two calls.
		as.flags |= fWait
		return External{f: as, gen: as.arm()}
	}
	if !as.execOnly("External") {
		if as.isForeign() {
			as.foreign().WaitExternal()
			return External{f: as, gen: foreignGen}
		}
		return External{}
	}
	as.flags |= fWait
	return External{f: as, gen: as.arm()}
}

// Args returns the values the previous step succeeded with, valid until the
// running step ends.
func (as *Steps) Args() *Args {
	if !as.current("Args") {
		if as.isForeign() {
			return as.foreign().Args()
		}
		return &Args{}
	}
	return &as.fl.args
}

// Arg returns Args().At(i).
func (as *Steps) Arg(i int) Value {
	g := goid.Current() // first: nothing loaded yet is kept across it (IsLoopG)
	if as == nil || !reactor.X.IsLoopG(as.e.r, g) || as.e.cur != as {
		if as.isForeign() {
			return as.foreign().Args().At(i)
		}
		as.current("Arg")
		return Value{}
	}
	return as.fl.args.At(i)
}

// Stack returns zeroed memory for a T that lives until the running step is
// destroyed (spec 1.14): completed, failed or canceled. Pointer-free types
// come from GC-free slabs, others from typed slabs the GC sees; neither
// allocates once warm. Never keep the pointer past the step. Called on an
// accessor that is not the running step's (kept past its step, or used
// outside its callback) it is a misuse, as for any call: the pointer it
// returns is then fresh memory of the GC, never another step's.
func Stack[T any](as *Steps) *T {
	if !as.current("Stack") {
		// A foreign step's Go memory is the GC's: it lives at least as
		// long as the step.
		return new(T)
	}
	as.flags &^= fBare
	return arena.Alloc[T](as.e.ar, &as.scope)
}
