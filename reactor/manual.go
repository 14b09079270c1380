package reactor

import (
	"runtime"
	"time"

	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/storerel"
)

// NewManual returns a deterministic reactor for tests: no thread, a virtual
// clock that starts at the current wall time and moves only in Advance.
func NewManual() *Reactor { return newReactor(Options{CPU: -1}, true) }

// enter makes the caller the loop of a manual reactor, waiting for another
// goroutine's drive to end. Nested calls from the loop just count.
func (r *Reactor) enter() {
	me := goid.Current()
	if r.loopG.Load() == me {
		if !r.manual {
			// A callback of a real loop (or of a turn run for it)
			// driving it: the count would go 0, 1, 0 and leave would
			// give up the loop word that the loop still holds, so
			// that other goroutines took the loop under it.
			panic(errDriveReal)
		}
		r.running++ // a callback driving its own manual reactor
		return
	}
	r.take(me)
}

// take waits until the loop is free and makes me, which is not the loop,
// its outermost drive.
func (r *Reactor) take(me uintptr) {
	for spins := 0; !r.loopG.CompareAndSwap(0, me); spins++ {
		if !r.manual {
			// A running real loop holds its word for good: waiting
			// for it would hang the caller silently.
			panic(errDriveReal)
		}
		if spins < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
	if r.driver.Load() != me { // a store is a locked instruction; the driver rarely changes
		if !r.manual {
			// A real loop not running (before Run, or after Close):
			// driving it would run its work on the caller, unseen by
			// Run. Only here, where the driver changes, so the
			// checks cost a manual drive nothing.
			storerel.Uintptr(&r.loopG, 0)
			panic(errDriveReal)
		}
		r.driver.Store(me)
	}
	r.running = 1
}

// errDriveReal is take's panic: Iterate, RunUntilIdle and Advance drive a
// manual reactor only.
const errDriveReal = "reactor: Iterate, RunUntilIdle or Advance on a real reactor (made by New or NewGroup): " +
	"only a NewManual reactor is driven by its caller; a real one runs its loop in Run (Group.Start), " +
	"and a goroutine waits for its flows with engine's Promise.Wait"

// hold is enter for a goroutine that only looks at or edits loop-owned
// state for a moment (Cancel and IsValid of a task, off the loop): it
// waits for the loop as take does but leaves the driver as it is, since
// it drives nothing. The driver is the goroutine the loop depends on
// (IsLoopGoroutine: its Promise.Wait panics rather than block, engine's
// ReadMetrics reads at once, only it may take the idle reactor, TakeIdle);
// a goroutine that canceled a timer must not take that role from it.
// Ended by leave.
func (r *Reactor) hold() {
	me := goid.Current()
	if r.loopG.Load() == me {
		r.running++
		return
	}
	for spins := 0; !r.loopG.CompareAndSwap(0, me); spins++ {
		if spins < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
	r.running = 1
}

// leave ends what enter began: the outermost leave gives up the loop's role.
func (r *Reactor) leave() {
	r.running--
	if r.running == 0 {
		r.loopGen++                   // before the release: see leaveOutermost
		storerel.Uintptr(&r.loopG, 0) // see takeLoop
	}
}

// Iterate runs the work that is ready now, once, and reports whether work is
// still ready. Timers not yet due are not ready work. NewManual only: on a
// real reactor it panics naming the mistake, from its own loop's callbacks
// too.
func (r *Reactor) Iterate() bool {
	r.enter()
	defer r.leave()
	more := r.iterate()
	if r.work.closing && r.running == 1 {
		r.closeLate() // Close made inside this drive (workWord)
	}
	return more
}

// RunUntilIdle iterates until nothing is ready. NewManual only: called
// outside a real reactor's loop it panics naming the mistake (from that
// loop's own callbacks it is not checked, and runs the ready work nested).
//
//go:nosplit
func (r *Reactor) RunUntilIdle() {
	// No stack check of its own (go:nosplit): the frame is small and
	// fixed, and each function called from here checks its own stack
	// (goid.Current is a NOSPLIT leaf without a frame), so the linker
	// proves the chain fits the guard or refuses to link. The check was
	// 2 Ir of every call (the EmptyIteration and Turn rows).
	me := goid.Current()
	if r.loopG.Load() == me {
		// A callback driving its own manual reactor (enter's nested
		// case), without a defer and without counting itself in running:
		// the outer drive already holds running >= 1, which is all that
		// leave and closeManual read (a nested enter inside this drive
		// counts up from there and back), and no panic can leave the
		// count wrong. Two read-modify-writes of each nested turn fewer
		// (the Turn row, driver=loop).
		//
		// The loop is `for r.iterate() {}` with iterate's head written
		// out (keep the three copies alike: here, the outermost drive
		// below, iterate): the local queue and the idle shortcut in this
		// frame, the full pass in iterateFull. A turn then runs its
		// callback two frames down (here, runLocalTo) instead of three,
		// and an empty iteration pays no frame of its own.
		// Two loops, not one after a conditional defer: there the
		// compiler kept the condition and the identity in the frame
		// (Simple from a goroutine +17 Ir).
		for {
			r.m.iterations++
			if !r.local.empty() {
				r.runLocal()
				if !r.local.empty() {
					goto full
				}
			}
			if !r.work.any() && r.inbox.Idle() { // Idle covers the overflow list (overflowList)
				return
			}
		full:
			if !r.iterateFull() {
				return
			}
		}
	}
	r.take(me)
	defer r.leaveOutermost()
	for { // the nested loop above (keep alike)
		r.m.iterations++
		if !r.local.empty() {
			r.runLocal()
			if !r.local.empty() {
				goto full2
			}
		}
		if !r.work.any() && r.inbox.Idle() {
			return
		}
	full2:
		if !r.iterateFull() {
			if r.work.closing {
				r.closeLate() // Close made inside this drive (workWord)
			}
			return
		}
	}
}

// leaveOutermost ends the drive that enter began as the outermost one (the
// caller was not the loop): it gives up the loop's role whatever running
// says, so a nested drive that a panic cut short cannot keep the loop
// taken.
//
// It moves loopGen before it gives the word up: a drive that ran no
// iteration of its own (RunUntilIdle's loop is written out) would leave
// it as it was, and a Loop made in this drive would read as held in the
// driver's next one, from any goroutine, before that one's first
// iteration or for the whole of it (the next RunUntilIdle). Moved before
// the release store, it is seen moved by whoever sees the word taken
// again (the store, then the next CompareAndSwap, order it).
func (r *Reactor) leaveOutermost() {
	r.running = 0
	r.loopGen++
	storerel.Uintptr(&r.loopG, 0) // see takeLoop
}

// Advance moves the virtual clock forward by d, tick by tick, firing due
// timers in deadline order (including timers scheduled during the advance
// that fall due within it) and running the work they make ready. NewManual
// only: on a real reactor it panics naming the mistake, from its own loop's
// callbacks too.
func (r *Reactor) Advance(d time.Duration) {
	r.enter()
	defer r.leave()
	for r.iterate() {
	}
	target := time.Duration(r.virtual.Load()) + d
	for {
		next, ok := r.wheel.NextDeadline()
		if !ok {
			break
		}
		at := time.Duration(next) * r.tick
		if at > target {
			break
		}
		if at > time.Duration(r.virtual.Load()) {
			r.virtual.Store(int64(at))
		}
		for r.iterate() {
		}
	}
	r.virtual.Store(int64(target))
	for r.iterate() {
	}
	if r.work.closing && r.running == 1 {
		r.closeLate() // Close made inside this drive (workWord)
	}
}
