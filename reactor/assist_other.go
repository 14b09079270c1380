//go:build !linux

package reactor

import "unsafe"

// Assist runs a parked real reactor's ready work on the calling goroutine
// (see the Linux build); there is no real loop on this system, so it never
// does and reports false.
func (r *Reactor) Assist() bool { return false }

// Parked reports false: there is no real loop to park on this system.
func (internals) Parked(r *Reactor) bool { return false }

// PostRun is Post (see the Linux build: there is no real loop to assist
// here).
func (internals) PostRun(r *Reactor, cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) bool {
	return r.xPost(cb, arg, aux)
}

// refreshNow is never needed: no turn is borrowed on this system.
func (r *Reactor) refreshNow() {}
