package reactor

import (
	"sync/atomic"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/timerwheel"
)

// addRemoteTimer puts a Deferred from another goroutine in the wheel. Under
// remoteMu, so that a Cancel racing it either is seen here or finds the
// timer recorded; deferredSettled tells the two cases apart later.
func (r *Reactor) addRemoteTimer(t task, pos uint64) {
	r.remoteMu.Lock()
	defer r.remoteMu.Unlock()
	if pos&overflowBit != 0 {
		r.overflowSettled = pos&^overflowBit + 1
	} else {
		r.deferredSettled = pos + 1
	}
	if _, ok := r.remoteCanceled[pos]; ok {
		delete(r.remoteCanceled, pos)
		r.remotePending.Add(-1)
		return
	}
	at := uint64((t.deadline + r.tick - 1) / r.tick)
	h := r.wheel.Add(at, timerwheel.Entry{Cb: fireRemoteTimer, Arg: unsafe.Pointer(r), Aux: pos})
	if r.remoteTimers == nil {
		r.remoteTimers = make(map[uint64]timerwheel.Handle)
		r.remoteFns = make(map[uint64]func())
	}
	r.remoteTimers[pos] = h
	r.remoteFns[pos] = t.fn
}

// settled reports whether the remote Deferred at pos was put in the wheel
// (and so has fired or been canceled if it is no longer there). Ring and
// overflow positions are separate sequences. Under remoteMu.
func (r *Reactor) settled(pos uint64) bool {
	if pos&overflowBit != 0 {
		return pos&^overflowBit < r.overflowSettled
	}
	return pos < r.deferredSettled
}

// markRemoteCanceled records a cancel of the task at pos. Under remoteMu.
func (r *Reactor) markRemoteCanceled(pos uint64) {
	if r.remoteCanceled == nil {
		r.remoteCanceled = make(map[uint64]struct{})
	}
	if _, dup := r.remoteCanceled[pos]; !dup {
		r.remoteCanceled[pos] = struct{}{}
		r.remotePending.Add(1)
	}
}

func (r *Reactor) takeCanceled(pos uint64) bool {
	return r.takeMark(r.remoteCanceled, &r.remotePending, pos)
}

// takeMark removes key from set (a cancel mark, counted by n), reporting
// whether it was there.
func (r *Reactor) takeMark(set map[uint64]struct{}, n *atomic.Int32, key uint64) bool {
	r.remoteMu.Lock()
	defer r.remoteMu.Unlock()
	if _, ok := set[key]; ok {
		delete(set, key)
		n.Add(-1)
		return true
	}
	return false
}

func fireRemoteTimer(arg unsafe.Pointer, pos uint64) {
	r := (*Reactor)(arg)
	r.remoteMu.Lock()
	_, live := r.remoteTimers[pos]
	fn := r.remoteFns[pos]
	delete(r.remoteTimers, pos)
	delete(r.remoteFns, pos)
	r.remoteMu.Unlock()
	if live {
		r.safeCall(fn)
	}
}

// takeTimerCanceled forgets an off-loop cancel of the timer with seq,
// reporting whether there was one.
func (r *Reactor) takeTimerCanceled(seq uint64) bool {
	return r.takeMark(r.timerCanceled, &r.timerPending, seq)
}
