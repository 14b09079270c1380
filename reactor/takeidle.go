package reactor

import (
	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/storerel"
)

// TakeIdle makes the caller, a goroutine outside the loops, the loop of an
// idle manual reactor for a moment, and reports whether it did: nobody
// drives it, and nothing waits in its local queue, its ring or its
// overflow list, and it is not closed. Work the caller would post to
// run first in the next iteration (local tasks run before anything else
// there) may then be done at once, under the loop's word, with the same
// outcome and none of the queue's cost: engine's Execute from a goroutine
// starts a plain root's flow this way instead of posting its start. What
// is done under it must run no user callback (the reactor's driver runs
// those); like the local post it replaces (takeLoop), it is not counted
// in Metrics.TasksRun. A true result must be followed by X.GiveBack(r),
// from the same goroutine.
func (internals) TakeIdle(r *Reactor) bool {
	if !r.manual {
		return false // inlined: a real reactor's caller pays one load
	}
	return r.takeIdle()
}

func (r *Reactor) takeIdle() bool {
	if !r.takeLoop(goid.Current()) {
		return false
	}
	if !r.local.empty() || r.closed.Load() {
		storerel.Uintptr(&r.loopG, 0) // a lock word's release (see takeLoop)
		return false
	}
	return true
}

// GiveBack ends what TakeIdle began: the loop's word is given back with a
// lock word's release-only store (see takeLoop).
func (internals) GiveBack(r *Reactor) { storerel.Uintptr(&r.loopG, 0) }
