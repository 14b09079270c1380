//go:build linux

package reactor

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/storerel"
)

// parkedG is the loop word of a real reactor whose loop is parked: blocked
// in epoll_wait after a turn that found nothing left to do. No goroutine
// identity is all ones (goid.Current is an aligned g's address, or a
// goroutine id counted from 1), so IsSameThread and
// IsLoopGoroutine stay false for everyone while the loop is parked, and
// only Assist and the loop itself take a parked word: code that takes an
// idle word (CompareAndSwap from 0: offLoop, cancelLocal, a second Run)
// treats a parked loop as a running one.
const parkedG = ^uintptr(0)

// park gives the loop word up before a blocking epoll_wait: from here until
// unpark, a goroutine that must wait for this reactor's work may run it
// itself (Assist).
func (r *Reactor) park() { storerel.Uintptr(&r.loopG, parkedG) }

// unpark takes the loop word back after epoll_wait returned, waiting out
// an assisting goroutine (it holds the word for one turn at most). It
// reports whether someone assisted meanwhile: the events epoll_wait
// returned may then be stale (a watch the assist removed, a timerfd it
// re-armed) and the loop drops them; level-triggered, whatever is still
// ready is reported again by the next epoll_wait.
//
// An assisted turn is usually a few microseconds: the loop spins, then
// yields. One that runs long (a step that computes, or blocks) would keep
// the loop's thread yielding, a core busy, for as long as it lasts: past
// unparkYields the loop sleeps instead, in steps that double up to
// unparkMaxPause, which bounds how late it takes its word back.
func (r *Reactor) unpark(me uintptr, assists uint64) (assisted bool) {
	var pause time.Duration
	for spins := 0; !r.loopG.CompareAndSwap(parkedG, me); spins++ {
		switch {
		case spins < 64:
		case spins < 64+unparkYields:
			runtime.Gosched()
		default:
			pause = min(max(2*pause, unparkMinPause), unparkMaxPause)
			time.Sleep(pause)
		}
	}
	return r.os.assists != assists
}

// The loop's wait for an assisted turn to end (unpark): yields, then
// sleeps from unparkMinPause doubling to unparkMaxPause.
const (
	unparkYields   = 64
	unparkMinPause = 10 * time.Microsecond
	unparkMaxPause = time.Millisecond
)

// assistants holds the identities of the goroutines assisting a reactor
// now: an assist must not start inside another (a callback that waits for
// a flow of another reactor would run that reactor's flows in the middle
// of its own reactor's callback, where both loops' state is in use).
// Its length bounds how many goroutines assist at once; more wait as
// before.
var assistants [64]atomic.Uintptr

// claimAssist registers me as assisting, unless it already is, or is a
// real loop, or every slot is taken. It returns the slot to free.
func claimAssist(me uintptr) (slot int, ok bool) {
	free := -1
	for i := range assistants {
		switch assistants[i].Load() {
		case me:
			return 0, false
		case 0:
			if free < 0 {
				free = i
			}
		}
	}
	if free < 0 || isLoop(me) {
		return 0, false
	}
	for i := free; i < len(assistants); i++ {
		if assistants[i].CompareAndSwap(0, me) {
			return i, true
		}
	}
	return 0, false
}

// Assist runs, on the calling goroutine, the work a real reactor has ready
// while its loop is parked (blocked in epoll_wait with nothing to do): one
// turn of the loop, under the loop word, so that a goroutine about to wait
// for a flow of this reactor (engine's Promise.Wait) runs the flow instead
// of paying for a wake-up of the loop's thread and then one of its own. It
// reports whether it ran a turn; it does nothing, and reports false, when
// the loop is running, when the reactor is manual, closed or not started,
// and when the caller is a loop or inside an assist already (its callbacks
// must not run another reactor's). The loop's next deadline is re-armed if
// the turn moved it, and a turn that leaves work behind wakes the loop for
// it.
//
// While it runs, the caller is the loop: callbacks see IsSameThread true,
// Promise.Wait on it still panics, and registrations (Watch, timers) go to
// the loop's own structures, which the loop reads again when it takes its
// word back. Only the OS thread differs, so a callback that depends on the
// loop's pinned thread (thread-local state, CPU affinity) must not be run
// by an assist: such a program waits with Done, not Wait.
func (r *Reactor) Assist() bool {
	if r.loopG.Load() != parkedG {
		return false
	}
	me := goid.Current()
	slot, ok := claimAssist(me)
	if !ok {
		return false
	}
	defer assistants[slot].Store(0)
	if !r.loopG.CompareAndSwap(parkedG, me) {
		return false
	}
	more := r.borrowedTurn()
	storerel.Uintptr(&r.loopG, parkedG)
	if more {
		r.wakeLoop()
	}
	return true
}

// borrowedTurn is the turn that a goroutine holding a parked loop's word
// runs in the loop's place (Assist, runHandedOff): up to maxIterPerTurn
// iterations, then the timerfd armed for the deadline the turn left. It
// reports whether work is left for the loop, a failure to arm the timer
// included (the loop arms it again and ends with the error).
func (r *Reactor) borrowedTurn() (more bool) {
	r.os.assists++
	if r.closed.Load() {
		return false
	}
	for i := 0; i < maxIterPerTurn; i++ {
		if more = r.iterate(); !more || r.closed.Load() {
			break
		}
	}
	if !more && !r.closed.Load() && r.armTimer() != nil {
		more = true
	}
	return more
}
