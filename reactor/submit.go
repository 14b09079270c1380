package reactor

import (
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/timerwheel"
)

// task is one unit of work sent through the MPSC ring.
type task struct {
	fn    func()
	cb    func(arg unsafe.Pointer, aux uint64)
	arg   unsafe.Pointer
	aux   uint64
	delay time.Duration // taskDeferred: the deadline since epoch; taskCancelTimer: the handle's index
	seq   uint64        // taskCancelTimer: the timer's sequence number
	kind  uint8
}

// timerTask packs a wheel handle into a task's word fields, keeping the
// ring's slots small: it is only needed by the rare off-loop cancel of a
// loop-side timer.
func timerTask(h timerwheel.Handle, seq uint64) task {
	idx, gen := h.Parts()
	return task{aux: gen, delay: time.Duration(idx), seq: seq, kind: taskCancelTimer}
}

const (
	taskImmediate uint8 = iota
	taskDeferred
	taskCall
	taskCancelTimer // cancel the loop-side timer th
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
		if r.overflowActive.Load() {
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

// loops holds the goroutine identities of running real loops, so that a
// loop posting to another reactor's full ring queues instead of waiting
// (two loops waiting on each other would deadlock). Read only when a ring
// is full.
var loops sync.Map // goid -> struct{}

func isLoop(g uintptr) bool {
	_, ok := loops.Load(g)
	return ok
}

// overflowBit marks the position of a task in the overflow list, a sequence
// of its own, so that a Handle never confuses it with a ring position.
const overflowBit = 1 << 63

// pushOverflow appends t to the overflow list; false after Close.
func (r *Reactor) pushOverflow(t task) (uint64, bool) {
	r.overflowMu.Lock()
	if r.closed.Load() {
		r.overflowMu.Unlock()
		return 0, false
	}
	pos := overflowBit | r.overflowSeq
	r.overflowSeq++
	r.overflow = append(r.overflow, t)
	r.overflowActive.Store(true)
	r.overflowMu.Unlock()
	return pos, true
}

// pending reports whether the task at pos has not been taken by the loop yet.
func (r *Reactor) pending(pos uint64) bool {
	if pos&overflowBit != 0 {
		return pos&^overflowBit >= r.overflowDone.Load()
	}
	return pos >= r.inbox.Consumed()
}

// drainOverflow runs the overflowed tasks. The ring is emptied first, under
// the lock: every task a producer put in the ring before it overflowed is
// in the ring by now, and while the flag is set no producer adds to the ring
// behind the tasks taken here, so each producer's order holds.
func (r *Reactor) drainOverflow() {
	r.overflowMu.Lock()
	b := r.batch[:0]
	for {
		t, ok := r.inbox.TryPop()
		if !ok {
			break
		}
		b = append(b, t)
	}
	fromRing := len(b)
	b = append(b, r.overflow...)
	clear(r.overflow)
	r.overflow = r.overflow[:0]
	first := r.overflowDone.Load()
	r.overflowDone.Store(r.overflowSeq)
	r.overflowActive.Store(false)
	r.overflowMu.Unlock()
	ringPos := r.inbox.Consumed() - uint64(fromRing)
	for i := range b {
		pos := ringPos + uint64(i)
		if i >= fromRing {
			pos = overflowBit | (first + uint64(i-fromRing))
		}
		r.runTask(b[i], pos)
		b[i] = task{}
	}
	r.batch = b[:0]
}
