//go:build !linux

package reactor

import "unsafe"

// RunParked reports false: there is no real loop to park on this system
// (see the Linux build); the caller posts.
func (internals) RunParked(r *Reactor, cb func(arg unsafe.Pointer, aux uint64), arg unsafe.Pointer, aux uint64) bool {
	return false
}
