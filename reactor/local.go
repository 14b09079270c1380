package reactor

import (
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/goid"
)

// The local queue is where work scheduled to run "now" on the loop waits:
// Immediate and Post called on the loop, and, on a manual reactor, called
// by a goroutine that can take the loop's role at once (nobody is driving
// it). It is the C++ reference's same-thread queue: a plain FIFO owned by
// whoever holds the loop (loopG), so adding and running cost no atomic
// operation, where the MPSC ring costs two per task and the timer wheel a
// node, a tick computation and a poll.
//
// Invariants:
//  1. Only the goroutine holding the loop (loopG == its goid) touches
//     buf, head and tail; loopG's CAS and store order those accesses.
//  2. The task added p-th (from 0) sits at buf[p&mask] while
//     head <= p < tail; its Handle's pos is localBit|p, a sequence of its
//     own, so an off-loop cancel mark in timerCanceled never names a wheel
//     timer.
//  3. One iteration runs only the tasks present when it started: a
//     callback that keeps posting itself cannot starve timers, posted
//     tasks or flows.
//  4. A slot that holds no task has fn and arg nil (grow's new slots are
//     zero; runLocalTo clears both as it takes a task), so Immediate
//     writes only fn and cb: aux is read only with cb.
//  5. A queued task is canceled when fn and cb are nil and arg is
//     canceledArg (cancel clears fn and cb, which also lets go of what
//     they hold, and marks arg). fn and cb both nil with any other arg
//     is Immediate(nil): Immediate stores fn as given (no test on the
//     turn's path), and the run panics with the mistake's name
//     (nilImmediate). postLocal never queues a nil cb (it queues
//     nilPost). The slot is four words, so its address is a shift.

// localBit marks a local task's sequence number (invariant 2).
const localBit = 1 << 62

type localTask struct {
	fn  func()                       // Immediate's callback, or nil
	cb  func(unsafe.Pointer, uint64) // Post's callback, or nil
	arg unsafe.Pointer
	aux uint64
}

// canceledMark is what canceledArg points at: a task's arg is never its
// address, since nothing outside this file can name it.
var canceledMark byte

// canceledArg marks a canceled local task's arg (invariant 5).
var canceledArg = unsafe.Pointer(&canceledMark)

// cancel cancels the task in t (invariant 5).
func (t *localTask) cancel() { t.fn, t.cb, t.arg = nil, nil, canceledArg }

// live reports whether t holds a task that was not canceled (invariant 5).
func (t *localTask) live() bool { return t.fn != nil || t.cb != nil || t.arg != canceledArg }

// nilImmediate is what an Immediate(nil) runs: on the loop, runLocalTo
// calls it for a task whose fn and cb are nil and that was not canceled
// (invariant 5); through the ring, immediateRing queues it. The mistake
// reaches the panic handler with its name.
func nilImmediate() { panic("reactor: Immediate(nil)") }

// nilPost is what postLocal queues for a nil callback (a Post, PostTo or
// PostRun whose callback is nil): the mistake reaches the panic handler
// with its name instead of reading as a canceled task and vanishing while
// Post reports true (invariant 5). The ring's and the overflow list's
// tasks (runTask) and PostRun's direct run (directTurn) call it for a nil
// callback too, so the name is the same on every path.
func nilPost(unsafe.Pointer, uint64) { panic("reactor: Post with a nil callback") }

type localQueue struct {
	buf        []localTask // power-of-two length, or nil before the first add
	mask       uint64      // len(buf)-1 once buf is not nil: the slot's index without a decrement
	head, tail uint64
}

// localInitial is the local queue's first capacity; it doubles when full.
const localInitial = 64

func (q *localQueue) empty() bool { return q.head == q.tail }

// grow doubles the buffer; kept out of line so that the appends stay small.
// A task is appended in place by Immediate and postLocal, each with
// the same few lines (claim the tail slot, growing when full, then store
// field by field): a shared add was a call of its own on the on-loop turn
// (it cannot inline because of grow), and a whole-struct store of the task
// was a quarter of that turn's profile.
//
//go:noinline
func (q *localQueue) grow() {
	n := max(2*len(q.buf), localInitial)
	buf := make([]localTask, n)
	for p := q.head; p < q.tail; p++ {
		buf[p&uint64(n-1)] = q.buf[p&uint64(len(q.buf)-1)]
	}
	q.buf, q.mask = buf, uint64(n-1)
}

// slot returns the place of the task with sequence p: buf[p mod len]
// without the bounds check, a compare and a branch of every append and
// every run (the Turn row). Safe: buf's length is a power of two, so
// p&(len-1) < len, and buf is not nil once a task was appended (grow
// runs before the first append fills a slot); callers pass a p they
// appended or are appending.
func (q *localQueue) slot(p uint64) *localTask {
	return (*localTask)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(q.buf)), uintptr(p&q.mask)*unsafe.Sizeof(localTask{})))
}

// at returns the task with sequence p if it is still queued, or nil.
func (q *localQueue) at(p uint64) *localTask {
	if p < q.head || p >= q.tail {
		return nil
	}
	return &q.buf[p&q.mask]
}

// runLocal runs the local tasks queued when it was called (invariant 3).
// Loop only.
// Small enough to inline into iterate.
func (r *Reactor) runLocal() {
	for end := r.local.tail; !r.runLocalTo(end); {
	}
}

// runLocalTo runs local tasks before position end under one deferred
// recover, instead of a defer per callback (safeCall's, an eighth of the
// on-loop turn). A panicking callback ends it early with done false, after
// the panic went where safeCall sends it; runLocal then goes on with the
// next task.
//
//go:nosplit
func (r *Reactor) runLocalTo(end uint64) (done bool) {
	// No stack check of its own (go:nosplit), as RunUntilIdle: a small
	// fixed frame, and every callee (the callbacks, the deferred
	// closure, takeTimerCanceled) checks its own stack; the linker
	// proves the chain fits. 2 Ir of every pass (the Turn row).
	defer func() {
		if done {
			return
		}
		if v := recover(); v != nil {
			r.panicHandler(v)
		}
	}()
	// The loop's test reads r.local.head, not q.head with q := &r.local
	// taken first: that address needed an explicit nil check of r (1 Ir
	// a pass); the load is its own.
	for r.local.head < end { // < : a nested drive (a callback running RunUntilIdle) may run past end
		q := &r.local
		p := q.head
		slot := q.slot(p)
		fn, cb, arg, aux := slot.fn, slot.cb, slot.arg, slot.aux
		slot.fn, slot.arg = nil, nil           // what may keep memory alive (cb is a plain function)
		q.head++                               // also Metrics.TimersFired's count of local tasks (LoopMetrics)
		if r.remote.timerPending.Load() != 0 { // not &&: that spent a bool on every task
			if r.takeTimerCanceled(localBit | p) {
				continue // canceled off the loop before it ran
			}
		}
		if cb != nil {
			cb(arg, aux)
		} else if fn != nil {
			fn()
		} else if arg != canceledArg { // both nil: canceled, or Immediate(nil) (invariant 5)
			nilImmediate()
		}
	}
	return true
}

// takeLoop makes the caller the loop of an idle manual reactor for a moment,
// so that it can queue work locally instead of through the ring. It fails
// (the caller then posts through the ring) while another goroutine drives
// the reactor, or while posted work is still waiting: a task queued here
// must not overtake one the same goroutine posted earlier. A true result
// must be followed by storerel.Uintptr(&r.loopG, 0).
//
// The loop word of a manual reactor is a lock: taken with a CompareAndSwap
// (here and in take), given back with a release-only store (a plain MOV on
// amd64, where atomic Store is a locked XCHG: two of the four locked
// instructions of a turn from a goroutine). Release order is all the giving
// back needs: the next taker's CompareAndSwap sees everything the holder
// wrote, and no holder reads another word after giving the loop up that it
// must see in order with the store (no Dekker-style hand-off; a goroutine
// that posts through the ring while another drives relies on the driver's
// bottom-of-iteration ring check, made while the word is still held).
func (r *Reactor) takeLoop(me uintptr) bool {
	return r.manual && r.loopG.Load() == 0 && r.inbox.Empty() && !r.overflow.active.Load() &&
		r.loopG.CompareAndSwap(0, me)
}

// postLocal queues cb(arg, aux) on the local queue. Loop only (or takeLoop).
func (r *Reactor) postLocal(cb func(unsafe.Pointer, uint64), arg unsafe.Pointer, aux uint64) bool {
	if r.closed.Load() {
		return false
	}
	// The append, written out (see grow).
	q := &r.local
	p := q.tail
	if p-q.head == uint64(len(q.buf)) {
		q.grow()
	}
	if cb == nil {
		cb = nilPost // invariant 5
	}
	s := q.slot(p)
	s.fn, s.cb, s.arg, s.aux = nil, cb, arg, aux
	q.tail = p + 1
	return true
}

// cancelLocal cancels the local task h names. Any goroutine; it never
// waits for a loop or a drive that is busy (a driver may be waiting for
// the canceler).
func (r *Reactor) cancelLocal(h Handle) {
	me := goid.Current()
	if r.loopG.Load() == me {
		if t := r.local.at(h.pos &^ localBit); t != nil {
			t.cancel()
		}
		return
	}
	if r.loopG.CompareAndSwap(0, me) {
		if t := r.local.at(h.pos &^ localBit); t != nil {
			t.cancel()
		}
		r.loopG.Store(0)
		return
	}
	// The queue belongs to whoever runs the loop now: leave a mark it
	// checks before it runs the task, and a task that takes the mark back
	// if the task ran first.
	r.markTimerCanceled(h.pos)
	r.push(task{seq: h.pos, kind: taskForgetLocal})
}

// localValid answers IsValid for a local task. Any goroutine.
func (r *Reactor) localValid(h Handle) bool {
	valid := func() bool {
		t := r.local.at(h.pos &^ localBit)
		return t != nil && t.live()
	}
	if r.IsSameThread() {
		return valid()
	}
	if r.remote.timerPending.Load() != 0 {
		r.remote.mu.Lock()
		_, canceled := r.remote.timerCanceled[h.pos]
		r.remote.mu.Unlock()
		if canceled {
			return false
		}
	}
	return r.offLoop(valid)
}

// workWord is the loop's pending-work word: flags for sources
// other than the local queue, read as one word by the idle iteration's
// shortcut (iterate), where it took a look at each source (two loads and a
// compare apiece). A flag is a "may hold work" hint. The local queue has
// none: a flag would cost its append and its run more than the look it
// saves (the queue's look is two loads of the Reactor itself, the wheel's
// and the engine's went through a pointer each).
//
//  1. timers is set by every wheel.Add and cleared only by iterate's full
//     pass when it finds the wheel empty, so timers false means the wheel
//     is empty.
//  2. ext is the flag X.PendingFlag hands to a layer for its Ext.Pending
//     (the engine's): the layer sets it whenever its run may have work.
//  3. foreign is set, on the loop, for good once an attachment's run
//     keeps no flag here (no Pending, another flag, or several
//     attachments): the shortcut then never skips the full pass, which
//     asks extMay. Until it is set, the task that sets it waits in the
//     ring, which the shortcut also looks at (ext.go, markForeign).
//  4. closing is set when a manual reactor's Close is made inside one
//     of its own drives (closeManual), which cannot end the flows under
//     a running step: it keeps the shortcut from returning, so every
//     drive goes through iterateFull, and the outermost drive's end
//     shuts down (closeLate) when iterateFull finds nothing more. The
//     idle look pays nothing for it; leave and leaveOutermost stay
//     small enough to inline.
//
// All four are loop-owned (touched only by whoever holds loopG), so plain
// accesses suffice; the ring and the overflow list, which other goroutines
// fill, keep their atomic look: the ring's words, which also say whether
// the overflow list is in use (a diverted ring is not Idle: overflowList).
type workWord struct {
	_       [0]uint32 // the word's alignment: any reads the flags as one uint32
	timers  bool
	ext     bool
	foreign bool
	closing bool
}

// any reports whether any flag is set: one load of the whole word.
func (w *workWord) any() bool {
	// Safe: workWord is four bytes aligned to four (its [0]uint32), so
	// the uint32 covers exactly its bytes; only the loop reads or writes
	// them.
	return *(*uint32)(unsafe.Pointer(w)) != 0
}
