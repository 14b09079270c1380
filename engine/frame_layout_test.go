package engine

import (
	"testing"
	"unsafe"
)

// A step frame is 128 bytes: Go's 128-byte size class places each one at
// a multiple of 128, so a frame is exactly two cache lines. At 136 it took
// the 144-byte class and spanned three lines wherever it lay, and a round
// over many parked flows (the ParallelWaitLoop row) reads every frame
// from memory: each line is a miss. A field added to Steps should move
// another out (rarely used state belongs in x or the scope), or say here
// why the third line is worth it.
func TestFrameSize(t *testing.T) {
	if got := unsafe.Sizeof(Steps{}); got != 128 {
		t.Errorf("Steps is %d bytes, want 128 (two cache lines: see Steps.tidx)", got)
	}
}

// An External's completion on the loop reads ctl, e, fl, st and flags of
// its step, which a round over many parked flows has evicted; the turn
// that follows reads and writes tidx, kind, parent, next, qlast and fn of
// a step Add flagged fBare (its other fields are known nil): they must
// all lie in the frame's first cache line.
func TestFrameCompletionFieldsFirstLine(t *testing.T) {
	var f Steps
	for name, end := range map[string]uintptr{
		"ctl":    unsafe.Offsetof(f.ctl) + unsafe.Sizeof(f.ctl),
		"e":      unsafe.Offsetof(f.e) + unsafe.Sizeof(f.e),
		"fl":     unsafe.Offsetof(f.fl) + unsafe.Sizeof(f.fl),
		"st":     unsafe.Offsetof(f.st) + unsafe.Sizeof(f.st),
		"flags":  unsafe.Offsetof(f.flags) + unsafe.Sizeof(f.flags),
		"tidx":   unsafe.Offsetof(f.tidx) + unsafe.Sizeof(f.tidx),
		"kind":   unsafe.Offsetof(f.kind) + unsafe.Sizeof(f.kind),
		"parent": unsafe.Offsetof(f.parent) + unsafe.Sizeof(f.parent),
		"next":   unsafe.Offsetof(f.next) + unsafe.Sizeof(f.next),
		"qlast":  unsafe.Offsetof(f.qlast) + unsafe.Sizeof(f.qlast),
		"fn":     unsafe.Offsetof(f.fn) + unsafe.Sizeof(f.fn),
	} {
		if end > 64 {
			t.Errorf("Steps.%s ends at byte %d, past the first cache line", name, end)
		}
	}
}
