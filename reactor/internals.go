package reactor

import (
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/timerwheel"
)

// X holds the reactor's entry points for the layers built on it (package
// engine; netio and abi through the engine): the untyped callback forms
// that take an unsafe.Pointer (Post, After, Watch, AtShutdown,
// RemoveAtShutdown; TimerParts and TimerOf for a Timer kept in two
// fields; PostTo, AfterTo, WatchTo, AtShutdownTo and
// RemoveAtShutdownOf are the typed forms a user calls) and the keyed
// attachment of a layer's per-reactor state (NewExtKey, Ext, ExtOrInit).
//
// X is a zero-size value: reactor.X.Post(r, cb, arg, aux) is the same
// call as the method was, inlined where it is small. `go doc -u ./reactor
// internals` lists its methods.
var X internals

// internals is the type of X: it has no state.
type internals struct{}

// Post runs cb(arg, aux) on the loop. Safe from any goroutine, never
// allocates. Called on the loop, it runs after the current callback returns.
// It reports false, doing nothing, after Close.
func (internals) Post(r *Reactor, cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) bool {
	return r.xPost(cb, arg, aux)
}

// After schedules cb(arg, aux) on the loop after d, without allocating. Loop only.
// It is the engine's timer: arg is typically a frame and aux its generation.
func (internals) After(r *Reactor, d time.Duration, cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) Timer {
	return r.xAfter(d, cb, arg, aux)
}

// TimerParts returns t's two parts, and TimerOf rebuilds the Timer from
// them, so that a holder short of space keeps them in two fields of its
// own (the engine's 128-byte step frame puts idx beside its small fields).
// idx is 0 exactly for the zero Timer. A rebuilt Timer is
// generation-checked like any other: a forged one stops no timer unless
// both parts match a pending timer's.
func (internals) TimerParts(t Timer) (idx uint32, gen uint64) { return t.h.Parts() }

// TimerOf rebuilds a Timer from TimerParts.
func (internals) TimerOf(idx uint32, gen uint64) Timer {
	return Timer{timerwheel.HandleOf(idx, gen)}
}

// Watch registers fd with the loop's poller: cb(arg, fd, ev) runs on the
// loop whenever fd is ready for what in asks (level-triggered). in may be
// 0: fd is known to the loop but not polled until SetInterest asks for
// something. Loop only; at most one watch per fd. The network layer
// (package netio) is its user.
func (internals) Watch(r *Reactor, fd int, in Interest, cb ioFunc, arg unsafe.Pointer) error {
	return r.xWatch(fd, in, cb, arg)
}

// AtShutdown registers cb(arg, aux) to run on the loop when the reactor
// shuts down: after the tasks and due timers accepted before Close, before
// the engine cancels the flows still running. Layers that own descriptors
// (package netio) close them there, so closing a reactor leaks nothing.
// Safe from any goroutine; hooks run in registration order, each once.
func (internals) AtShutdown(r *Reactor, cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) {
	r.xAtShutdown(cb, arg, aux)
}

// RemoveAtShutdown forgets the hooks registered with arg: a layer that
// closed its descriptors itself no longer needs them. Safe from any
// goroutine.
func (internals) RemoveAtShutdown(r *Reactor, arg unsafe.Pointer) {
	r.xRemoveAtShutdown(arg)
}

// Ext returns the value attached with key by ExtOrInit, or nil. Safe from
// any goroutine.
func (internals) Ext(r *Reactor, key *ExtKey) any {
	return r.xExt(key)
}

// ExtOrInit returns the value attached to the reactor with key (the engine
// keeps its per-reactor pools there), attaching init()'s Ext the first
// time. Safe from any goroutine; init runs at most once per reactor and
// key. Each key has its own attachment: the loop runs every attachment's
// hooks, in the order they were made.
func (internals) ExtOrInit(r *Reactor, key *ExtKey, init func() Ext) any {
	return r.xExtOrInit(key, init)
}

// TakeParked takes the loop word of r, a real reactor whose loop is parked
// (blocked in epoll_wait with nothing to do) and that was not made with
// Options.OwnThread, for the calling goroutine, and reports whether it did. The caller is then r's loop (IsSameThread)
// and may change r's loop-owned state, an attached layer's included,
// without running any callback, and must give the word back at once with
// GiveParked. It is how the engine makes a flow waiting on a parked
// reactor ready without posting a task for it (External).
func (internals) TakeParked(r *Reactor) bool { return r.xTakeParked() }

// GiveParked gives back the word TakeParked took; woke says the caller left
// work ready, for which the loop is woken as for a post (or its turn owed
// to the calling loop: a hand-off).
func (internals) GiveParked(r *Reactor, woke bool) { r.xGiveParked(woke) }

// TakeParkedRun is TakeParked for a caller that, when it is an ordinary
// goroutine (outside the loops and outside any turn run in a loop's
// place), will let GiveParkedRun run the loop's turn in its place. It
// returns a token for GiveParkedRun; Taken(token) reports whether the word
// was taken.
func (internals) TakeParkedRun(r *Reactor) int { return r.xTakeParkedRun() }

// Taken reports whether TakeParkedRun's token holds r's loop word.
func (internals) Taken(token int) bool { return token != takenNone }

// GiveParkedRun gives back the word TakeParkedRun took; woke says the
// caller left work ready. A loop (or a goroutine inside a turn run in a
// loop's place) gives it back as GiveParked does. An ordinary goroutine
// first runs the attached layer's ready flows once itself, as the loop's
// next iteration would (reactor doc, "Who the loop is"): the flows it made
// ready run on it, up to their next wait, their end or their budget, and
// the loop is woken only for what they leave.
func (internals) GiveParkedRun(r *Reactor, token int, woke bool) { r.xGiveParkedRun(token, woke) }

// PendingFlag returns the flag a layer should give as its Ext.Pending
// (the engine does): a flag the reactor keeps in its own pending-work
// word, so that an iteration with nothing to do reads it together with
// the loop's other sources in one load. Any other flag works too, at the
// cost of a look of its own on every iteration. Written on the loop only.
func (internals) PendingFlag(r *Reactor) *bool { return r.xPendingFlag() }

// IsLoopG reports whether g (goid.Current of the caller) is r's loop: it is
// IsSameThread with the goroutine read first, so that a caller on a hot
// path reads it before loading anything it would otherwise keep across
// the call (Go has no callee-saved registers: every value live across the
// goid call is spilled and reloaded).
func (internals) IsLoopG(r *Reactor, g uintptr) bool { return r.loopG.Load() == g }

// NewExtKey returns a new key; name is for messages only. Make one per
// layer, in a package variable.
func (internals) NewExtKey(name string) *ExtKey { return xNewExtKey(name) }
