package reactor

import "github.com/asyncsteps/asyncsteps/timerwheel"

// Handle identifies a task scheduled with Immediate or Deferred. It is a small
// comparable value. The zero Handle is never valid, and a Handle whose task
// has run or was canceled stays invalid even when its storage is reused.
type Handle struct {
	t timerwheel.Handle // handleTimer: the wheel entry
	// pos depends on kind. handleTimer: the timer's sequence number on its
	// loop (Reactor.timerSeq), the key of an off-loop cancel mark.
	// handleRemote, handleRemoteDeferred: the task's position among
	// submissions, a ring position, or overflowBit | its place in the
	// overflow list (submit.go); each is used once per reactor.
	pos  uint64
	kind uint8
}

const (
	handleNone           uint8 = iota
	handleTimer                // made on the loop: a wheel entry
	handleRemote               // Immediate from another goroutine: pos is its submission position
	handleRemoteDeferred       // Deferred from another goroutine: pos as for handleRemote
	handleLocal                // Immediate or Post made on the loop: pos is localBit|its local sequence
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
