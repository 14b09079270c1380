//go:build !linux

package reactor

import "unsafe"

// RunParked reports false: there is no real loop to park on this system
// (see the Linux build); the caller posts.
func (internals) RunParked(r *Reactor, cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) bool {
	return false
}

// RunParkedP reports false: RunParked's way (see the Linux build).
func (internals) RunParkedP(r *Reactor, cb func(arg unsafe.Pointer, aux uint64) unsafe.Pointer, arg unsafe.Pointer, aux uint64) (unsafe.Pointer, bool) {
	return nil, false
}
