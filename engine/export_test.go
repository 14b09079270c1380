package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/arena"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// ArenaStats reports the occupancy of the engine's arena on r, for the
// external tests. Loop only (or while no loop runs).
func ArenaStats(r *reactor.Reactor) arena.Stats { return engineOf(r).ar.Stats() }

// SkipIfDebug skips a test that needs released roots to be pooled (an
// allocation count, a stale root's calls doing nothing) in the
// asyncsteps_debug build, where they are never reused and a call on one
// panics.
func SkipIfDebug(t testing.TB) {
	t.Helper()
	if debugReleased {
		t.Skip("asyncsteps_debug: released roots are not pooled, and a call on one panics")
	}
}

// FlowLocked is the count of entered AddLocked sections that as's flow
// keeps for Holds (flow.locked), for the external tests. Loop only.
func FlowLocked(as *Steps) int { return int(as.fl.locked) }
