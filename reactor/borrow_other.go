//go:build !linux

package reactor

// No real loop parks on this system (see the Linux build): nothing to borrow.
func (r *Reactor) xTakeParked() bool { return false }

func (r *Reactor) xGiveParked(bool) {}

const (
	takenNone   = -1
	takenBorrow = -2
)

func (r *Reactor) xTakeParkedRun() int { return takenNone }

func (r *Reactor) xGiveParkedRun(int, bool) {}

// inOwnSlot: no loop slots on this system; isLoop asks loops.
func inOwnSlot(uintptr) bool { return false }

// mayBeOffSlot: every loop is found in loops alone on this system.
func mayBeOffSlot() bool { return true }
