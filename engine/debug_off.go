//go:build !asyncsteps_debug

package engine

// debugReleased is false in the default build: released roots are pooled
// and reused, and checkReleased compiles to nothing. The asyncsteps_debug
// build tag turns it on (debug_on.go).
const debugReleased = false

// debugChecks turns on the engine's invariant checks on hot paths (keep's
// kept-frame contract): a constant, so the default build compiles them out.
const debugChecks = false
