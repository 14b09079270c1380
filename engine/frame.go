package engine

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/arena"
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

	e      *engine // fixed for the life of the memory
	fl     *flow   // the flow this step runs in
	parent *Steps  // the step whose execution added this one, the root, or the parallel step of a branch
	next   *Steps  // next sibling in parent's queue; free-list link when free

	// head..tail: sub-steps added but not yet started, in order. For a
	// parallel step before it starts: its branches.
	head, tail *Steps

	fn       ExecFunc
	onerr    ErrorFunc
	oncancel CancelFunc
	timer    reactor.Timer
	scope    arena.Scope    // Stack[T] memory and per-kind state, freed with the step
	x        unsafe.Pointer // per-kind: *loopState, *Args of SuccessStep, first branch *flow of a running parallel, AddWith's *T, a foreign accessor's *foreignSteps
	bin      unsafe.Pointer // a bridge's binding (binary.go): released through Bridge.Release when the step is destroyed
	xfn      unsafe.Pointer // AddWith: the user's func(*Steps, *T), called by fn
	n        int32          // parallel: branches still running
	kind     uint8
	flags    uint16
	st       uint8 // status; loop-owned, so no atomic on the step path
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
	xWriting        // an External on another goroutine is writing the result
	xClaimed        // that result is written and posted to the loop
	xBits    = 2
	xMask    = 1<<xBits - 1
)

// Frame kinds.
const (
	kStep     = iota // a user step
	kRoot            // a root: its children are level 0
	kParallel        // children (head..tail) are branches
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
)

func (f *Steps) status() uint8      { return f.st }
func (f *Steps) setStatus(st uint8) { f.st = st }

// disarm makes every External of f stale before the loop fails, cancels or
// destroys it. A result being written on another goroutine is waited out:
// the writer holds xWriting only for the copy of a few words. It reports
// whether a result had been delivered (xClaimed): it is left in the flow's
// mailbox for the caller to apply, or to clear.
func (f *Steps) disarm() (claimed bool) {
	for {
		c := f.ctl.Load()
		switch c & xMask {
		case xNone:
			return false
		case xWriting:
			runtime.Gosched()
		default:
			if f.ctl.CompareAndSwap(c, c&^xMask) {
				return c&xMask == xClaimed
			}
		}
	}
}

// releaseClaim disarms f, dropping a delivered result: the step is being
// canceled or has already ended otherwise. The mailbox is cleared so it
// pins nothing.
func (f *Steps) releaseClaim() {
	if f.disarm() {
		f.fl.clearMailbox()
	}
}

// enqueue appends c to f's queue of not-started sub-steps.
func (f *Steps) enqueue(c *Steps) {
	if f.tail == nil {
		f.head = c
	} else {
		f.tail.next = c
	}
	f.tail = c
}

// dequeue removes and returns the first not-started sub-step.
func (f *Steps) dequeue() *Steps {
	c := f.head
	if c != nil {
		f.head = c.next
		if f.head == nil {
			f.tail = nil
		}
		c.next = nil
	}
	return c
}

// frameChunk is how many frames the loop allocates at once when its free
// list runs dry: chunked, so steady state never allocates.
const frameChunk = 256

// newFrame takes a frame from the loop's free list. Loop only.
func (e *engine) newFrame(kind uint8, parent *Steps, fl *flow) *Steps {
	f := e.free
	if f == nil {
		f = e.grow()
	}
	e.free = f.next
	e.stats.FramesLive++
	if e.stats.FramesFree--; e.stats.FramesFree < e.trim.freeLow {
		e.trim.freeLow = e.stats.FramesFree
	}
	f.next = nil
	f.kind = kind
	f.parent = parent
	f.fl = fl
	f.setStatus(stQueued)
	return f
}

func (e *engine) grow() *Steps {
	chunk := make([]Steps, frameChunk)
	e.stats.FramesCreated += frameChunk
	e.stats.FramesFree += frameChunk
	for i := range chunk {
		chunk[i].e = e
		if i+1 < len(chunk) {
			chunk[i].next = &chunk[i+1]
		}
	}
	e.free = &chunk[0]
	return e.free
}

// releaseFrame destroys a frame: its timer stops, its Stack memory is
// freed, and it returns to a free list with a new generation. Loop only.
func (e *engine) releaseFrame(f *Steps) {
	if f.head != nil {
		e.discardQueued(f) // never lose queued frames, whatever path ends f
	}
	if !f.timer.IsZero() {
		e.r.Stop(f.timer)
	}
	if !f.scope.Empty() {
		e.ar.Release(&f.scope)
	}
	if f.ctl.Load()&xMask != xNone {
		f.releaseClaim()
	}
	if f.bin != nil {
		bridge.release(f.bin, true)
	}
	var rt *root
	if f.fl != nil {
		rt = f.fl.root
	}
	f.reset()
	e.stats.FramesLive--
	if rt != nil && rt.spareN < rt.spareCap {
		// Give the frame back to the root that is finishing, so that the
		// next build of that root off the loop can take it without a lock.
		f.next = rt.spare
		rt.spare = f
		rt.spareN++
		return
	}
	f.next = e.free
	e.free = f
	if e.stats.FramesFree++; e.stats.FramesFree > trimFloor && !e.trim.armed {
		e.armTrim()
	}
}

// reset clears every field but e and ctl: ctl may be read by a stale
// External at any time, so it is never written non-atomically.
func (f *Steps) reset() {
	f.fl, f.parent, f.next, f.head, f.tail = nil, nil, nil, nil, nil
	f.fn, f.onerr, f.oncancel = nil, nil, nil
	f.timer = reactor.Timer{}
	f.scope = arena.Scope{}
	f.x, f.xfn, f.bin = nil, nil, nil
	f.n, f.kind, f.flags, f.st = 0, 0, 0, stFree
}

// discardQueued destroys f's not-started sub-steps (recursively: a queued
// parallel step holds queued branches).
func (e *engine) discardQueued(f *Steps) {
	for c := f.dequeue(); c != nil; c = f.dequeue() {
		e.discardQueued(c)
		e.releaseFrame(c)
	}
}
