package engine

import (
	"github.com/asyncsteps/asyncsteps/arena"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// ArenaStats reports the occupancy of the engine's arena on r, for the
// external tests. Loop only (or while no loop runs).
func ArenaStats(r *reactor.Reactor) arena.Stats { return engineOf(r).ar.Stats() }
