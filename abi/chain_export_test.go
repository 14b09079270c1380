package abi

import "github.com/asyncsteps/asyncsteps/engine"

// SetChainsOff turns chains off (true) or on, for tests that compare.
func SetChainsOff(off bool) { chainsOff = off }

// ChainCounts returns how many chains ran on the reactor of as, and how
// many step callbacks they ran. Loop only (or while no loop runs).
func ChainCounts(as *engine.Steps) (chains, steps uint64) {
	p := poolOf(as)
	return p.chains, p.chainSteps
}
