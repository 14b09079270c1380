//go:build linux

package reactor

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

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
// before. A goroutine takes the slot its identity hashes to (its home)
// when that is free, and then finds itself there; one that had to take
// another slot counted itself in nAway before it took it, so a goroutine
// that is not in its home and finds nAway 0 is in no assist, without a
// look through the slots. The common claim (the caller of Execute or Wait
// from ordinary code, home free) is one CompareAndSwap, and its release a
// release-only store: no other locked instruction (each ~20 cycles, four
// a claim before; the FanOut row's Promise per flow claims once).
var (
	assistants [64]atomic.Uintptr
	nAway      atomic.Int32
)

// assistHome is the slot of assistants that me tries first.
func assistHome(me uintptr) int {
	w, _ := hintBit(me)
	return w
}

// claimAssist registers me as assisting, unless it already is, or is a
// real loop, or every slot is taken. It returns the slot to free
// (releaseAssist), with awaySlot set when it is not me's home.
func claimAssist(me uintptr) (slot int, ok bool) {
	home := assistHome(me)
	if assistants[home].Load() == me {
		return 0, false
	}
	if nAway.Load() != 0 {
		for i := range assistants {
			if assistants[i].Load() == me {
				return 0, false
			}
		}
	}
	if isLoop(me) {
		return 0, false
	}
	if assistants[home].CompareAndSwap(0, me) {
		return home, true
	}
	// Away from home: counted first, so that this goroutine, asking
	// again from inside its turn, looks through the slots.
	nAway.Add(1)
	for i := 1; i < len(assistants); i++ {
		j := (home + i) & (len(assistants) - 1)
		if assistants[j].Load() == 0 && assistants[j].CompareAndSwap(0, me) {
			return j | awaySlot, true
		}
	}
	nAway.Add(-1)
	return 0, false
}

// releaseAssist frees the slot claimAssist gave. The release-only store
// suffices: only the slot's own goroutine reads its identity there, and
// a claimer that finds the slot still taken tries the next.
func releaseAssist(slot int) {
	storerel.Uintptr(&assistants[slot&(len(assistants)-1)], 0)
	if slot&awaySlot != 0 {
		nAway.Add(-1)
	}
}

// awaySlot marks a slot claimAssist gave away from its claimer's home.
const awaySlot = 1 << 8

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
// word back. Only the OS thread differs, so a reactor whose callbacks
// depend on the loop's pinned thread (thread-local state, CPU affinity) is
// made with Options.OwnThread, and Assist never runs its turns.
func (r *Reactor) Assist() bool {
	if r.loopG.Load() != parkedG || r.os.ownThread { // parkedG: a real loop, r.os set
		return false
	}
	me := goid.Current()
	slot, ok := claimAssist(me)
	if !ok {
		return false
	}
	if !r.loopG.CompareAndSwap(parkedG, me) {
		releaseAssist(slot)
		return false
	}
	held := true
	defer func() {
		if held {
			r.abandonTurn(slot)
		}
	}()
	more := r.borrowedTurn()
	r.loopGen++ // before the release: Loops made in this hold stop being held (leaveOutermost)
	storerel.Uintptr(&r.loopG, parkedG)
	releaseAssist(slot)
	held = false
	if more {
		r.wakeLoop()
	}
	return true
}

// abandonTurn is the end of a turn run in the parked loop's place (Assist,
// PostRun) that a panic left: one that passed through every recover of
// the turn, which only a PanicHandler that panics itself raises (a program
// that makes a callback's panic fatal). On a loop it would end the
// process; here it goes on to the goroutine that ran the turn, which may
// recover it (net/http recovers a handler's panic). So the word goes back,
// as a turn's end would give it, the slot is freed, and the loop is woken
// for whatever the turn left (it re-arms the timerfd itself): the reactor
// goes on, instead of its loop waiting in unpark for good.
func (r *Reactor) abandonTurn(slot int) {
	r.loopGen++ // before the release: Loops made in this hold stop being held (leaveOutermost)
	storerel.Uintptr(&r.loopG, parkedG)
	releaseAssist(slot)
	r.wakeLoop()
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
	// The loop read its clock when it last woke, perhaps long ago: the
	// first CoarseNow of this turn reads it again (refreshNow), so it lags
	// by at most this turn, as on the loop. A flag, not a clock read here:
	// most turns never ask (engine's per-name flow time does).
	r.m.nowStale = true
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

// directTurn is borrowedTurn for postRun's task when nothing else was
// queued: the task runs first (as the turn's first iteration would run
// it), then, when all it did was ready flows of the attached layer (the
// engine's Execute: a Promise's root from ordinary code, as in FanOut), the
// layer's run runs them at once, without the iteration's looks at the
// ring, the clock and the wheel; anything else the task or the flows left
// (a local or posted task, a timer added or canceled, foreign work, flows
// still ready) takes the turn's iterations as before. The caller holds the
// parked loop's word; a panic of the task is postRun's (its one deferred
// recover).
//
// Due timers are not looked for on the short way: the loop armed its
// timerfd for the wheel's earliest deadline before it parked (and every
// turn run in its place that added or canceled a timer re-arms it:
// armTimer below), so a timer that comes due wakes the loop, which fires
// it; a turn that changed no timer leaves that arming true. What the
// short way saves is a clock read and two looks at the wheel per Promise
// whenever some timer is pending (an engine's pool trim is, most of the
// time), beside the iteration's own ~80 instructions.
func (r *Reactor) directTurn(cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64, changes uint64, inTask *bool) (more bool) {
	r.os.assists++
	r.m.nowStale = true // borrowedTurn's clock rule
	if cb == nil {
		cb = nilPost // named as postLocal names it (invariant 5 of local.go)
	}
	cb(arg, aux)
	*inTask = false
	// Iterations counts one for the task and the flows it readied, as
	// when the first iterate ran them.
	r.m.iterations++
	i := 1
	if r.onlyFlows(changes) {
		if !*r.extMay.Load() || !r.ext.Load().run.RunReady() {
			if r.onlyFlows(changes) {
				return false // nothing left, the timerfd's arming stands
			}
		}
	} else {
		i = 0 // the iterations below run what the task left, first of all
	}
	for ; i < maxIterPerTurn; i++ {
		if more = r.iterate(); !more || r.closed.Load() {
			break
		}
	}
	// No timer and none armed (the common case): armTimer would find
	// nothing to do; its call and the wheel's lookup are skipped.
	if !more && !r.closed.Load() && (r.wheel.Len() != 0 || r.os.armedAt != 0) && r.armTimer() != nil {
		more = true
	}
	return more
}

// onlyFlows reports whether, since a direct turn began (changes: the
// wheel's count then), the only work this turn itself may have made is the
// attached layer's ready flows: no local task queued, no timer added or
// canceled, no foreign work, the reactor open. Tasks other goroutines
// post meanwhile are not looked for: each such post woke the loop (it
// found the loop's sleeping flag set, as for any parked loop), which runs
// it. Loop word only.
func (r *Reactor) onlyFlows(changes uint64) bool {
	return r.local.empty() && r.wheel.Changes() == changes && !r.work.foreign && !r.closed.Load()
}

// PostRun is Post for a goroutine outside the loops that starts work it
// expects to wait for (engine's Execute from an ordinary goroutine): when
// the loop is parked, the caller takes its word and runs the loop's turn
// itself, which runs the task, so neither the loop's thread nor, later,
// the caller sleeps and is woken. Otherwise (the loop is running, the
// caller is a loop or inside an assist, the reactor is manual or
// closing) it is Post. It reports what Post reports.
//
// Holding the word, the caller runs the task first, directly, when the
// local queue, the ring and the overflow list are all empty (nothing
// posted before it is waiting: the turn would run it first anyway), and
// queues it in the ring behind what is there otherwise; either way the
// turn runs it, and Metrics.TasksRun counts it once. A full ring gives
// the word back and is Post's. The turn is at most
// maxIterPerTurn iterations: the flows the task starts and whatever else
// the parked loop had ready run on the caller's goroutine as the loop
// (reactor doc, "Who the loop is"); work the turn leaves wakes the loop.
func (internals) PostRun(r *Reactor, cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) bool {
	if r.loopG.Load() != parkedG {
		return r.xPost(cb, arg, aux)
	}
	return r.postRun(cb, arg, aux)
}

// Parked reports whether r's loop is parked now (a hint: it may wake at
// once). Inlined, so that a caller whose reactor is not a parked real one
// (a manual reactor's driver: engine's Simple driven from a goroutine)
// pays one load and goes to Post without a call of PostRun.
func (internals) Parked(r *Reactor) bool { return r.loopG.Load() == parkedG }

// postRun is PostRun for a loop found parked.
func (r *Reactor) postRun(cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) (accepted bool) {
	if r.os.ownThread || r.closed.Load() || r.overflow.active.Load() {
		return r.xPost(cb, arg, aux)
	}
	me := goid.Current()
	slot, ok := claimAssist(me)
	if !ok {
		return r.xPost(cb, arg, aux)
	}
	if !r.loopG.CompareAndSwap(parkedG, me) {
		releaseAssist(slot)
		return r.xPost(cb, arg, aux)
	}
	// One deferred function for the whole turn: a panic of the direct
	// task (inTask) goes to the PanicHandler under the word, as
	// runLocalTo sends a queued task's, and the turn ends there, the loop
	// woken only for what the task left; any other panic that reaches
	// here (a PanicHandler that panics) goes on to the caller, the word
	// given back and the loop woken first. One defer instead of two
	// (runFirst's flag-tested one was ~40 instructions a Promise on
	// the FanOut row).
	held, inTask := true, false
	var changes uint64 // the wheel's count when the direct task began
	defer func() {
		if !held {
			return
		}
		if inTask {
			// Handled under the word, as runLocalTo handles a queued
			// task's; the word goes back after it, even if the
			// handler panics in turn. A nil v is panic(nil) under
			// GODEBUG=panicnil=1 (recover ended it, and postRun
			// returns: the task ran, as a queued one that does so
			// counts as run, with no handler call) or runtime.Goexit
			// (postRun never returns; the word and the slot go back
			// all the same).
			v := recover()
			accepted = true  // run, as a queued task that panics is
			r.m.iterations++ // the iteration that ran it, as directTurn counts
			r.endPanickedTurn(v, slot, changes)
			return
		}
		r.abandonTurn(slot)
	}()
	var more bool
	switch {
	case r.local.empty() && r.inbox.Empty() && !r.overflow.active.Load():
		// Nothing else is waiting (the common case: a parked loop has
		// nothing ready): the task runs first in the turn wherever it is
		// queued, so it runs now, directly, without the local queue's
		// push and pop (FanOut: a Promise per flow runs a turn each).
		ok = !r.closed.Load() // as postLocal: nothing runs once closed
		if ok {
			r.m.tasks++ // a post from another goroutine (Metrics.TasksRun), which skipped the ring
			inTask = true
			changes = r.wheel.Changes()
			more = r.directTurn(cb, arg, aux, changes, &inTask)
		}
	default:
		// Behind what is queued, through the ring even when only the
		// local queue holds work (left by a turn run in the loop's place
		// that ran out of iterations; rare): the turn runs the local
		// tasks first, then this one, and counts it once, in TasksRun, as
		// the direct path does. Queued locally, runLocalTo would also
		// count it in TimersFired, which counts the loop's own posts.
		_, ok = r.inbox.TryPushPos(task{cb: cb, arg: arg, aux: aux, kind: taskCall})
		if ok {
			more = r.borrowedTurn()
		}
	}
	r.loopGen++ // before the release: Loops made in this hold stop being held (leaveOutermost)
	storerel.Uintptr(&r.loopG, parkedG)
	releaseAssist(slot)
	held = false
	if more {
		r.wakeLoop()
	}
	if !ok && !r.closed.Load() {
		return r.xPost(cb, arg, aux) // the ring was full: Post waits or queues
	}
	return ok
}

// refreshNow reads the clock for CoarseNow in a turn run in the parked
// loop's place (borrowedTurn). Loop word only. Not inlined, so that
// CoarseNow stays small enough to inline into the engine's per-flow
// metrics (a named flow reads it at its start and its end).
//
//go:noinline
func (r *Reactor) refreshNow() {
	r.m.now = nanotime()
	r.m.nowStale = false
}

// endPanickedTurn ends a direct turn whose task panicked past every
// recover (v, nil for panic(nil) under GODEBUG=panicnil=1) or exited its
// goroutine (runtime.Goexit): the panic goes to the PanicHandler under the
// word, then the word and the assist slot go back and the loop is woken
// only for what the task left, as at directTurn's end; a handler that
// panics in turn abandons the turn (the word and the slot go back all the
// same) and its panic goes on. postRun's and RunParked's direct tasks end
// this way.
func (r *Reactor) endPanickedTurn(v any, slot int, changes uint64) {
	handled := false
	defer func() {
		if !handled {
			r.abandonTurn(slot) // the handler panicked in turn
		}
	}()
	if v != nil {
		r.panicHandler(v)
	}
	handled = true
	left := !r.onlyFlows(changes) || *r.extMay.Load()
	r.loopGen++ // before the release: Loops made in this hold stop being held (leaveOutermost)
	storerel.Uintptr(&r.loopG, parkedG)
	releaseAssist(slot)
	if left {
		r.wakeLoop()
	}
}
