package reactor

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/timerwheel"
)

// remoteBook is the bookkeeping of the handles other goroutines hold:
// cancels of tasks still in the ring or overflow list, Deferred tasks
// from other goroutines once they are in the wheel, and off-loop cancels
// of loop-side timers. Rare paths, kept off the hot one behind one mutex;
// the two counters let the loop skip the lock when nothing is marked.
type remoteBook struct {
	mu              sync.Mutex
	canceled        map[uint64]struct{}          // positions canceled before the loop took them
	timers          map[uint64]timerwheel.Handle // positions of remote Deferred tasks now in the wheel
	fns             map[uint64]func()            // their callbacks, by the same position
	deferredSettled uint64                       // remote Deferred positions below it are in the wheel, fired or canceled
	overflowSettled uint64                       // the same for overflow positions (without overflowBit)
	pending         atomic.Int32                 // len(canceled), read without the lock
	timerCanceled   map[uint64]struct{}          // seqs of loop-side timers canceled off the loop, not yet removed
	timerPending    atomic.Int32                 // len(timerCanceled), read without the lock
}

// addRemoteTimer puts a Deferred from another goroutine in the wheel. Under
// remoteMu, so that a Cancel racing it either is seen here or finds the
// timer recorded; deferredSettled tells the two cases apart later.
func (r *Reactor) addRemoteTimer(t task, pos uint64) {
	r.remote.mu.Lock()
	defer r.remote.mu.Unlock()
	if pos&overflowBit != 0 {
		r.remote.overflowSettled = pos&^overflowBit + 1
	} else {
		r.remote.deferredSettled = pos + 1
	}
	if _, ok := r.remote.canceled[pos]; ok {
		delete(r.remote.canceled, pos)
		r.remote.pending.Add(-1)
		return
	}
	at := uint64((t.deadline + r.tick - 1) / r.tick)
	r.work.timers = true
	h := r.wheel.Add(at, timerwheel.Entry{Cb: fireRemoteTimer, Arg: unsafe.Pointer(r), Aux: pos})
	if r.remote.timers == nil {
		r.remote.timers = make(map[uint64]timerwheel.Handle)
		r.remote.fns = make(map[uint64]func())
	}
	r.remote.timers[pos] = h
	r.remote.fns[pos] = t.fn
}

// settled reports whether the remote Deferred at pos was put in the wheel
// (and so has fired or been canceled if it is no longer there). Ring and
// overflow positions are separate sequences. Under remoteMu.
func (r *Reactor) settled(pos uint64) bool {
	if pos&overflowBit != 0 {
		return pos&^overflowBit < r.remote.overflowSettled
	}
	return pos < r.remote.deferredSettled
}

// markRemoteCanceled records a cancel of the task at pos. Under remoteMu.
func (r *Reactor) markRemoteCanceled(pos uint64) {
	if r.remote.canceled == nil {
		r.remote.canceled = make(map[uint64]struct{})
	}
	if _, dup := r.remote.canceled[pos]; !dup {
		r.remote.canceled[pos] = struct{}{}
		r.remote.pending.Add(1)
	}
}

func (r *Reactor) takeCanceled(pos uint64) bool {
	return r.takeMark(r.remote.canceled, &r.remote.pending, pos)
}

// takeMark removes key from set (a cancel mark, counted by n), reporting
// whether it was there.
func (r *Reactor) takeMark(set map[uint64]struct{}, n *atomic.Int32, key uint64) bool {
	r.remote.mu.Lock()
	defer r.remote.mu.Unlock()
	if _, ok := set[key]; ok {
		delete(set, key)
		n.Add(-1)
		return true
	}
	return false
}

func fireRemoteTimer(arg unsafe.Pointer, pos uint64) {
	r := (*Reactor)(arg)
	r.remote.mu.Lock()
	_, live := r.remote.timers[pos]
	fn := r.remote.fns[pos]
	delete(r.remote.timers, pos)
	delete(r.remote.fns, pos)
	r.remote.mu.Unlock()
	if live {
		r.safeCall(fn)
	}
}

// takeTimerCanceled forgets an off-loop cancel of the timer with seq,
// reporting whether there was one.
func (r *Reactor) takeTimerCanceled(seq uint64) bool {
	return r.takeMark(r.remote.timerCanceled, &r.remote.timerPending, seq)
}
