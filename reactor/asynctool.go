package reactor

import (
	"time"

	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/storerel"
	"github.com/asyncsteps/asyncsteps/timerwheel"
)

// Immediate schedules fn to run on the loop as soon as possible. Safe from
// any goroutine; callbacks run in the order posted. Returns the zero Handle
// after Close.
//
// On the loop an Immediate goes to the loop's local queue, which runs after
// the timers already due and only as far as it was filled when the
// iteration began: a callback that keeps rescheduling itself cannot starve
// timers, posted tasks or flows. So does an Immediate from a goroutine that
// finds a manual reactor idle (nobody driving it, nothing posted waiting).
//
//go:nosplit
func (r *Reactor) Immediate(fn func()) Handle {
	// No stack check of its own (go:nosplit): the frame is small and
	// fixed, and each function called from here checks its own stack
	// (goid.Current is a NOSPLIT leaf without a frame), so the linker
	// proves the chain fits the guard or refuses to link. The check was
	// 2 Ir of every call (the Turn row).
	me := goid.Current()
	if r.loopG.Load() == me {
		// On the loop: the append written out (see localQueue.grow; as a
		// call of its own, with the frame that the ring path's task needs,
		// it was a third of the on-loop Immediate on the Turn row), and written
		// twice (keep the two alike): here, where the turn returns at
		// once, and below for a goroutine that takes an idle manual
		// reactor's loop for this call, which gives it back after. One
		// branch on a saved "held" did both and cost the turn a second
		// test and a longer path.
		if r.closed.Load() {
			return Handle{}
		}
		q := &r.local
		p := q.tail
		if p-q.head == uint64(len(q.buf)) {
			q.grow()
		}
		s := q.slot(p)
		// arg is nil already and aux unused with fn (invariant 4 of
		// local.go): two stores, not four. A nil fn is stored as it is
		// and named when it runs (invariant 5).
		s.fn, s.cb = fn, nil
		q.tail = p + 1
		return Handle{pos: localBit | p, kind: handleLocal}
	}
	if !r.takeLoop(me) {
		return r.immediateRing(fn)
	}
	var h Handle
	if !r.closed.Load() { // the append above (keep alike)
		q := &r.local
		p := q.tail
		if p-q.head == uint64(len(q.buf)) {
			q.grow()
		}
		s := q.slot(p)
		s.fn, s.cb = fn, nil
		q.tail = p + 1
		h = Handle{pos: localBit | p, kind: handleLocal}
	}
	storerel.Uintptr(&r.loopG, 0) // a lock word's release (see takeLoop)
	return h
}

// immediateRing is Immediate from a goroutine that is not the loop and
// could not take it: through the ring. Out of line: the task it builds
// needs a frame the on-loop path should not pay for.
//
//go:noinline
func (r *Reactor) immediateRing(fn func()) Handle {
	if fn == nil {
		fn = nilImmediate // named, as on the loop (invariant 5 of local.go)
	}
	pos, ok := r.push(task{fn: fn, kind: taskImmediate})
	if !ok {
		return Handle{}
	}
	return Handle{pos: pos, kind: handleRemote}
}

// Deferred schedules fn to run on the loop after d. Safe from any goroutine.
// Returns the zero Handle after Close.
func (r *Reactor) Deferred(d time.Duration, fn func()) Handle {
	if r.IsSameThread() {
		if r.closed.Load() {
			return Handle{}
		}
		r.timerSeq++
		r.work.timers = true
		return Handle{t: r.wheel.Add(r.deadlineTick(d), timerwheel.Entry{Fn: fn, Aux: r.timerSeq}), pos: r.timerSeq, kind: handleTimer}
	}
	// The deadline counts from this call, not from when the loop takes
	// the task: deadline carries it as time since epoch.
	pos, ok := r.push(task{fn: fn, deadline: r.elapsed() + max(d, 0), kind: taskDeferred})
	if !ok {
		return Handle{}
	}
	return Handle{pos: pos, kind: handleRemoteDeferred}
}

// Cancel cancels a task scheduled with Immediate or Deferred. It is not an
// error if the task already ran, was canceled, or h is the zero Handle.
// Safe from any goroutine.
func (r *Reactor) Cancel(h Handle) {
	switch h.kind {
	case handleTimer:
		if r.IsSameThread() {
			r.wheel.Cancel(h.t)
			return
		}
		if r.manual {
			r.hold() // not enter: canceling is not driving
			r.wheel.Cancel(h.t)
			r.leave()
			return
		}
		if me := goid.Current(); r.loopG.CompareAndSwap(0, me) {
			r.wheel.Cancel(h.t)
			r.loopG.Store(0)
			return
		}
		// The wheel belongs to the loop. Mark the timer canceled where the
		// loop looks before it runs a user timer, so that a task whose
		// Cancel returned never runs, without waiting for a loop that may
		// be busy; the loop then removes it from the wheel.
		r.markTimerCanceled(h.pos)
		r.push(timerTask(h.t, h.pos))
	case handleLocal:
		r.cancelLocal(h)
	case handleRemote:
		r.remote.mu.Lock()
		if r.pending(h.pos) {
			r.markRemoteCanceled(h.pos)
		}
		r.remote.mu.Unlock()
	case handleRemoteDeferred:
		r.remote.mu.Lock()
		if th, ok := r.remote.timers[h.pos]; ok {
			delete(r.remote.timers, h.pos)
			delete(r.remote.fns, h.pos)
			if r.IsSameThread() {
				r.wheel.Cancel(th)
			}
			// Off the loop, the wheel entry stays until it falls due; its
			// callback finds no record in remoteTimers and does nothing.
		} else if !r.settled(h.pos) {
			// Not yet in the wheel: still in the ring, or taken by the
			// loop and about to be added, which checks this mark.
			r.markRemoteCanceled(h.pos)
		}
		r.remote.mu.Unlock()
	}
}

// markTimerCanceled records an off-loop cancel of the loop-side task with
// sequence seq (a wheel timer's, or a local task's with localBit).
func (r *Reactor) markTimerCanceled(seq uint64) {
	r.remote.mu.Lock()
	if r.remote.timerCanceled == nil {
		r.remote.timerCanceled = make(map[uint64]struct{})
	}
	if _, dup := r.remote.timerCanceled[seq]; !dup {
		r.remote.timerCanceled[seq] = struct{}{}
		r.remote.timerPending.Add(1)
	}
	r.remote.mu.Unlock()
}

// IsValid reports whether h still refers to a task that has not run and was
// not canceled. Safe from any goroutine; for a timer scheduled on the loop,
// an answer off the loop is a snapshot that may already be stale.
func (r *Reactor) IsValid(h Handle) bool {
	switch h.kind {
	case handleTimer:
		if r.IsSameThread() {
			return r.wheel.Valid(h.t)
		}
		if r.remote.timerPending.Load() != 0 {
			r.remote.mu.Lock()
			_, canceled := r.remote.timerCanceled[h.pos]
			r.remote.mu.Unlock()
			if canceled {
				return false
			}
		}
		return r.offLoop(func() bool { return r.wheel.Valid(h.t) })
	case handleLocal:
		return r.localValid(h)
	case handleRemote:
		r.remote.mu.Lock()
		defer r.remote.mu.Unlock()
		if r.pending(h.pos) {
			_, canceled := r.remote.canceled[h.pos]
			return !canceled && !r.closed.Load()
		}
		return false
	case handleRemoteDeferred:
		r.remote.mu.Lock()
		defer r.remote.mu.Unlock()
		if _, ok := r.remote.timers[h.pos]; ok {
			return true
		}
		if !r.settled(h.pos) {
			_, canceled := r.remote.canceled[h.pos]
			return !canceled && !r.closed.Load()
		}
		return false
	}
	return false
}

// offLoop answers a question about loop-owned state (the wheel, the local
// queue) asked from another goroutine. That state is not safe to read
// there: a manual reactor is taken between drives; a running loop is asked
// through the ring and answers through a channel. It is the slow path by
// design.
func (r *Reactor) offLoop(ask func() bool) bool {
	if r.manual {
		r.hold() // not enter: asking is not driving
		defer r.leave()
		return ask()
	}
	if me := goid.Current(); r.loopG.CompareAndSwap(0, me) {
		// No loop is running (not started, or stopped): its state is idle.
		defer r.loopG.Store(0)
		return ask()
	}
	ch := make(chan bool, 1)
	if _, ok := r.push(task{fn: func() { ch <- ask() }, kind: taskImmediate}); !ok {
		return false
	}
	return <-ch
}
