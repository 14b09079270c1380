package reactor

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/timerwheel"
)

// task is one unit of work sent through the MPSC ring. Each field has one
// meaning, except aux, the word a callback is given; the kind says which
// fields are set.
type task struct {
	fn       func()                               // taskImmediate, taskDeferred
	cb       func(arg unsafe.Pointer, aux uint64) // taskCall
	arg      unsafe.Pointer                       // taskCall
	aux      uint64                               // taskCall: cb's aux; taskCancelTimer: the wheel handle's generation
	deadline time.Duration                        // taskDeferred: the deadline, as time since epoch
	seq      uint64                               // taskCancelTimer: the timer's sequence number (Handle.pos)
	timerIdx uint32                               // taskCancelTimer: the wheel handle's index (in kind's padding: no growth)
	kind     uint8
}

// timerTask packs a wheel handle into a task's word fields, keeping the
// ring's slots small: it is only needed by the rare off-loop cancel of a
// loop-side timer.
func timerTask(h timerwheel.Handle, seq uint64) task {
	idx, gen := h.Parts()
	return task{aux: gen, timerIdx: idx, seq: seq, kind: taskCancelTimer}
}

const (
	taskImmediate uint8 = iota
	taskDeferred
	taskCall
	taskCancelTimer // cancel a loop-side timer (timerTask)
	taskForgetLocal // forget the off-loop cancel mark of local task seq, canceling it if still queued
)

// push hands t to the loop through the ring. When the ring is full a real
// reactor's caller waits for the loop (backpressure), unless the caller is
// itself a reactor's loop; then, as on a manual reactor, the task goes to
// the overflow list.
func (r *Reactor) push(t task) (uint64, bool) {
	// A task accepted before Close is never left behind without a counter
	// of producers in flight: shutdown closes the ring, which fails every
	// later push, and takes every position claimed before; the overflow
	// list is checked under its lock.
	for spins := 0; ; spins++ {
		if r.closed.Load() {
			return 0, false
		}
		if r.overflow.active.Load() {
			// Behind tasks already in the overflow list: each producer's
			// order holds only if nobody jumps back into the ring first.
			pos, ok := r.pushOverflow(t)
			if ok && r.wake != nil {
				r.wake()
			}
			return pos, ok
		}
		if pos, ok := r.inbox.TryPushPos(t); ok {
			if r.wake != nil {
				r.wake()
			}
			return pos, true
		}
		if r.manual || isLoop(goid.Current()) {
			// A manual reactor runs only when driven; and a loop waiting
			// for another loop's ring could deadlock with it. Both queue.
			pos, ok := r.pushOverflow(t)
			if ok && r.wake != nil {
				r.wake()
			}
			return pos, ok
		}
		// Full: the loop is behind. Yield first; if that is not enough the
		// loop is busy for longer, so sleep with a capped backoff instead of
		// burning the core the loop may need.
		if r.wake != nil {
			r.wake()
		}
		if spins < 16 {
			runtime.Gosched()
		} else {
			d := time.Microsecond << min(spins-16, 10)
			time.Sleep(d)
		}
	}
}

// overflowList is the locked list of tasks a full ring could not take (on
// a manual reactor, or from another reactor's loop). Producers append
// under mu; while active is set every producer appends here, behind the
// tasks already in it, so each producer's order holds; the loop drains it
// (drainOverflow) after emptying the ring.
//
// While active is set the ring is diverted too (ring.MPSC.Divert): both
// are set and cleared together under mu, the divert first on the way in,
// so whoever sees active sees it. A diverted ring is never Idle, so the
// loop's idle look (iterate's head, RunUntilIdle's loops) reads the ring
// alone and still never skips a pass while a task waits here: one load
// and test fewer per look (the EmptyIteration and Turn rows). A diverted
// ring reads as full (Empty false too): the readers that test Empty test
// active beside it, so they answer as before, and the full pass's
// drainInbox finds the ring's own tasks, or none, before drainOverflow.
type overflowList struct {
	mu     sync.Mutex
	tasks  []task
	active atomic.Bool   // a producer that sees it set appends to tasks, keeping its own order
	seq    uint64        // overflow positions handed out; under mu
	done   atomic.Uint64 // overflow positions below it were taken by the loop
	batch  []task        // loop-owned scratch for draining the overflow; nil while a drain runs its tasks
}

// loops holds the goroutine identities of running real loops, so that a
// loop posting to another reactor's full ring queues instead of waiting
// (two loops waiting on each other would deadlock). Read only when a ring
// is full.
var loops sync.Map // goid -> struct{}

// loopHint has a bit, picked by a hash of the identity, set for every
// goroutine that ever ran a real loop (markLoop, before it joins loops;
// never cleared). isLoop and owe look in loops only where the caller's bit
// is set, so that a goroutine that never was a loop (every caller of
// Execute or Wait from ordinary Go code) pays one load, not a map lookup.
// A goroutine only ever asks about itself, after its own markLoop: no
// ordering beyond program order is needed. A bit shared with another
// identity, or left by a loop that ended, costs the lookup, nothing more.
var loopHint [64]atomic.Uint64

func hintBit(g uintptr) (word int, bit uint64) {
	h := uint64(g) * 0x9E3779B97F4A7C15 // Fibonacci hashing: the high bits mix all of g
	return int(h >> 58), 1 << (h >> 52 & 63)
}

// markLoop sets g's bit in loopHint; a loop calls it before loops.Store.
func markLoop(g uintptr) {
	w, b := hintBit(g)
	loopHint[w].Or(b)
}

// mayBeLoop reports false when g has never run a real loop.
func mayBeLoop(g uintptr) bool {
	w, b := hintBit(g)
	return loopHint[w].Load()&b != 0
}

// isLoop reports whether g, the caller, runs a real loop now. A hint bit
// is never cleared, and a goroutine's identity is reused once it exits
// (package goid): a caller whose identity once was a loop's, or shares
// its bit, would pay the map's lookup (an interface hash, ~80
// instructions) on every Execute and Wait from then on. The loop slots
// answer first: a caller that is in its slot is a loop; one that is not
// is none unless some running loop lost its slot to another (rare: then
// loops has the answer).
func isLoop(g uintptr) bool {
	if !mayBeLoop(g) {
		return false
	}
	if inOwnSlot(g) {
		return true
	}
	if !mayBeOffSlot() {
		return false
	}
	_, ok := loops.Load(g)
	return ok
}

// overflowBit marks the position of a task in the overflow list, a sequence
// of its own, so that a Handle never confuses it with a ring position.
const overflowBit = 1 << 63

// pushOverflow appends t to the overflow list; false after Close.
func (r *Reactor) pushOverflow(t task) (uint64, bool) {
	r.overflow.mu.Lock()
	if r.closed.Load() {
		r.overflow.mu.Unlock()
		return 0, false
	}
	pos := overflowBit | r.overflow.seq
	r.overflow.seq++
	r.overflow.tasks = append(r.overflow.tasks, t)
	if !r.overflow.active.Load() { // under mu: only the first task diverts
		r.inbox.Divert() // before active (overflowList)
		r.overflow.active.Store(true)
	}
	r.overflow.mu.Unlock()
	return pos, true
}

// pending reports whether the task at pos has not been taken by the loop yet.
func (r *Reactor) pending(pos uint64) bool {
	if pos&overflowBit != 0 {
		return pos&^overflowBit >= r.overflow.done.Load()
	}
	return pos >= r.inbox.Consumed()
}

// drainOverflow runs the overflowed tasks. The ring is emptied first, under
// the lock: every task a producer put in the ring before it overflowed is
// in the ring by now, and while the flag is set no producer adds to the ring
// behind the tasks taken here, so each producer's order holds.
//
// Emptied means up to the last position claimed, not the first one not yet
// published: a producer may have claimed a position before the divert and
// not published it yet (descheduled between the two), and the ring's
// positions after it may hold another producer's task posted before that
// producer's tasks in the list. The pop stops at the gap; the list is then
// left for a later pass, still active and the ring still diverted (so the
// loop does not skip the pass, and no producer claims behind the gap), and
// only the ring's tasks before the gap run now. The gap closes within the
// stalled producer's next few instructions.
func (r *Reactor) drainOverflow() {
	r.overflow.mu.Lock()
	// Taken out while its tasks run: one of them may drive the reactor
	// nested (RunUntilIdle from a callback), and that drain must fill an
	// array of its own, not this one's tasks not yet run.
	b := r.overflow.batch[:0]
	r.overflow.batch = nil
	for {
		t, ok := r.inbox.TryPop()
		if !ok {
			break
		}
		b = append(b, t)
	}
	fromRing := len(b)
	var first uint64
	if r.inbox.Consumed() == r.inbox.Claimed() {
		b = append(b, r.overflow.tasks...)
		clear(r.overflow.tasks)
		r.overflow.tasks = r.overflow.tasks[:0]
		first = r.overflow.done.Load()
		r.overflow.done.Store(r.overflow.seq)
		r.inbox.Undivert() // the list is empty again (overflowList)
		r.overflow.active.Store(false)
	}
	r.overflow.mu.Unlock()
	ringPos := r.inbox.Consumed() - uint64(fromRing)
	for i := range b {
		pos := ringPos + uint64(i)
		if i >= fromRing {
			pos = overflowBit | (first + uint64(i-fromRing))
		}
		r.runTask(b[i], pos)
		b[i] = task{}
	}
	r.m.tasks += uint64(len(b))
	r.overflow.batch = b[:0]
}
