//go:build !asyncsteps_debug

package engine

// debugReleased is false in the default build: released roots are pooled
// and reused, and checkReleased compiles to nothing. The asyncsteps_debug
// build tag turns it on (debug_on.go).
const debugReleased = false
