package reactor

import "github.com/asyncsteps/asyncsteps/timerwheel"

// Handle identifies a task scheduled with Immediate or Deferred. It is a small
// comparable value. The zero Handle is never valid, and a Handle whose task
// has run or was canceled stays invalid even when its storage is reused.
type Handle struct {
	t    timerwheel.Handle // kind == handleTimer
	pos  uint64            // kind == handleRemote: position in the MPSC ring
	kind uint8
}

const (
	handleNone uint8 = iota
	handleTimer
	handleRemote         // Immediate from another goroutine: pos is its ring position
	handleRemoteDeferred // Deferred from another goroutine: pos is its ring position
)

// IsZero reports whether h is the zero Handle.
func (h Handle) IsZero() bool { return h.kind == handleNone }
