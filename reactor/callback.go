package reactor

import (
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/storerel"
	"github.com/asyncsteps/asyncsteps/timerwheel"
)

// Timer is a compact handle for a timer made with After; the zero Timer is
// not a timer. Generation-checked like Handle.
type Timer struct{ h timerwheel.Handle }

// IsZero reports whether t is the zero Timer.
func (t Timer) IsZero() bool { return t.h.IsZero() }

// xAfter schedules cb(arg, aux) on the loop after d, without allocating. Loop only.
// It is the engine's timer: arg is typically a frame and aux its generation.
func (r *Reactor) xAfter(d time.Duration, cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) Timer {
	r.work.timers = true
	return Timer{r.wheel.Add(r.deadlineTick(d), timerwheel.Entry{Cb: cb, Arg: arg, Aux: aux})}
}

// Stop cancels a timer made with After. A stale or zero Timer is ignored. Loop only.
func (r *Reactor) Stop(t Timer) {
	if !t.h.IsZero() {
		r.wheel.Cancel(t.h)
	}
}

// xPost runs cb(arg, aux) on the loop. Safe from any goroutine, never
// allocates. Called on the loop, it runs after the current callback returns.
// It reports false, doing nothing, after Close.
func (r *Reactor) xPost(cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) bool {
	me := goid.Current()
	if r.loopG.Load() == me {
		return r.postLocal(cb, arg, aux)
	}
	if r.takeLoop(me) {
		ok := r.postLocal(cb, arg, aux)
		storerel.Uintptr(&r.loopG, 0) // a lock word's release (see takeLoop)
		return ok
	}
	_, ok := r.push(task{cb: cb, arg: arg, aux: aux, kind: taskCall})
	return ok
}
