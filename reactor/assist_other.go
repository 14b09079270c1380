//go:build !linux

package reactor

// Assist runs a parked real reactor's ready work on the calling goroutine
// (see the Linux build); there is no real loop on this system, so it never
// does and reports false.
func (r *Reactor) Assist() bool { return false }
