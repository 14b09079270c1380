package reactor

import (
	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/storerel"
)

// TakeIdle makes the caller, the goroutine that drives a manual reactor,
// the loop of that reactor between two of its drives for a moment, and
// reports whether it did: nobody drives it now, nothing waits in its local
// queue, its ring or its overflow list, and it is not closed. Only the
// driver (the goroutine of the last Iterate, RunUntilIdle or Advance):
// between drives it is the loop's goroutine (IsLoopGoroutine) and reads
// what the loop owns without the loop's word (engine's ReadMetrics and
// StatsOf), so another goroutine's work in that state would race with
// those reads; others get false and post. Work the caller would post to
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
	// takeLoop's test, less its r.manual (TakeIdle's), with the driver's.
	me := goid.Current()
	if r.driver.Load() != me || r.loopG.Load() != 0 || !r.inbox.Empty() || r.overflow.active.Load() ||
		!r.loopG.CompareAndSwap(0, me) {
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
