package reactor

import (
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/goid"
)

// PostLazy is Post without the wake-up: the task is in the loop's queue
// when it returns true, but a parked loop is not woken for it. The caller
// owes the wake-up and pays it soon, without blocking in between: it runs
// the loop's turn itself (Assist, whose turn takes the task), or, when
// Assist reports false, calls Wake. A caller that is about to wait for the
// work (engine's Batch.Run) so saves the thread wake-up of a loop whose
// work it runs itself. On the loop, on a manual reactor, after Close and
// on the rare paths of a full ring it is Post (they wake as Post does).
//
// No wake-up is lost: until the caller's Assist or Wake, a loop that
// parked without the task is parked with its sleeping flag set, so Assist
// finds it parked (and its turn drains the ring), or Wake finds the flag
// and writes the eventfd; a loop that is awake takes the task by itself.
func (internals) PostLazy(r *Reactor, cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) bool {
	if r.manual || r.wake == nil || r.closed.Load() || r.overflow.active.Load() || r.loopG.Load() == goid.Current() {
		return r.xPost(cb, arg, aux)
	}
	if _, ok := r.inbox.TryPushPos(task{cb: cb, arg: arg, aux: aux, kind: taskCall}); ok {
		return true
	}
	return r.xPost(cb, arg, aux) // full ring, or closed meanwhile: Post's paths
}

// Wake pays the wake-up a PostLazy owes: it wakes the loop if it may be
// asleep, as every post does (a busy loop costs one load).
func (internals) Wake(r *Reactor) {
	if r.wake != nil {
		r.wake()
	}
}
