//go:build !linux

package reactor

// No real loop parks on this system (see the Linux build): nothing to borrow.
func (r *Reactor) xTakeParked() bool { return false }

func (r *Reactor) xGiveParked(bool) {}
