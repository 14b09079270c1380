package reactor

import (
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/cast"
)

// The typed entry points below are Post, After, Watch, AtShutdown and
// RemoveAtShutdown for callers that have a *T rather than an
// unsafe.Pointer: the conversion happens once, here, and costs nothing (no
// closure, no allocation; a func(*T, ...) and a func(unsafe.Pointer, ...)
// make the same machine call, see package cast). cb is usually a
// top-level function and p a long-lived object, so that one callback serves
// every object of a layer. Layers above the engine (netio, syncprim, the
// stepsd example) use these and import no unsafe.

// PostTo runs cb(p, aux) on the loop, as Post does: safe from any
// goroutine, never allocates, false after Close.
func PostTo[T any](r *Reactor, cb func(p *T, aux uint64), p *T, aux uint64) bool {
	return r.xPost(cast.Func[func(unsafe.Pointer, uint64)](cast.FuncPtr(cb)), unsafe.Pointer(p), aux)
}

// AfterTo schedules cb(p, aux) on the loop after d, as After does. Loop only.
func AfterTo[T any](r *Reactor, d time.Duration, cb func(p *T, aux uint64), p *T, aux uint64) Timer {
	return r.xAfter(d, cast.Func[func(unsafe.Pointer, uint64)](cast.FuncPtr(cb)), unsafe.Pointer(p), aux)
}

// WatchTo registers fd with the loop as Watch does, calling cb(p, fd, ev)
// when it is ready. Loop only.
func WatchTo[T any](r *Reactor, fd int, in Interest, cb func(p *T, fd int, ev Event), p *T) error {
	return r.xWatch(fd, in, cast.Func[ioFunc](cast.FuncPtr(cb)), unsafe.Pointer(p))
}

// AtShutdownTo registers cb(p, aux) to run on the loop when the reactor
// shuts down, as AtShutdown does. Safe from any goroutine.
func AtShutdownTo[T any](r *Reactor, cb func(p *T, aux uint64), p *T, aux uint64) {
	r.xAtShutdown(cast.Func[func(unsafe.Pointer, uint64)](cast.FuncPtr(cb)), unsafe.Pointer(p), aux)
}

// RemoveAtShutdownOf forgets the shutdown hooks registered with p, as
// RemoveAtShutdown does. Safe from any goroutine.
func RemoveAtShutdownOf[T any](r *Reactor, p *T) { r.xRemoveAtShutdown(unsafe.Pointer(p)) }
