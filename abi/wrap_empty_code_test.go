package abi_test

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
)

// Error with an empty code is InternalError on every accessor (the
// engine's doc, CONTRACT.md "Errors with an empty code"): on a foreign
// one too, whose engine would otherwise get the empty code and end the
// flow with a code that reads as no error.
func TestWrapForeignEmptyErrorCode(t *testing.T) {
	f := newForeign(t)
	f.root.Add(func(as *engine.Steps) { as.Error("", "no code") })
	if done, c := f.run(); done != 2 || c != engine.InternalError {
		t.Fatalf("flow ended %d %q, want error InternalError", done, c)
	}
	f.free()
}
