//go:build asyncsteps_debug

package engine

// debugReleased is true in the asyncsteps_debug build: a released root is
// never reused, and any call on it panics with its name (checkReleased),
// so a *Steps kept past Release is found where it is used, not when it
// cancels whoever got its memory next.
const debugReleased = true

// debugChecks turns on the engine's invariant checks on hot paths (keep's
// kept-frame contract): a constant, so the default build compiles them out.
const debugChecks = true
