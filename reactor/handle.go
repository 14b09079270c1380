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
	handleLocal          // Immediate queued on the loop's local queue: pos is localBit|its sequence
)

// IsZero reports whether h is the zero Handle.
func (h Handle) IsZero() bool { return h.kind == handleNone }

// Words packs h into three words, for interfaces that carry a handle as
// plain data (FTN12 2.7's FutoInHandle); HandleFromWords unpacks it.
func (h Handle) Words() (w0, w1, w2 uint64) {
	idx, gen := h.t.Parts()
	return uint64(idx) | uint64(h.kind)<<32, gen, h.pos
}

// HandleFromWords is the inverse of Handle.Words. Words that did not come
// from Words give a Handle that is not valid (or the zero Handle).
func HandleFromWords(w0, w1, w2 uint64) Handle {
	return Handle{t: timerwheel.HandleOf(uint32(w0), w1), pos: w2, kind: uint8(w0 >> 32)}
}
