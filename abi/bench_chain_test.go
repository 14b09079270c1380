package abi_test

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/abi/internal/ctest"
	"github.com/asyncsteps/asyncsteps/engine"
)

// BenchmarkCChainFloor is the floor of the C step (BenchmarkCStep/impl=c)
// under a design that runs a chain of C steps added by a C step in C, back
// to back: benchSteps steps of the same shape per crossing, with no engine
// and no conversion between them. b.N counts steps.
func BenchmarkCChainFloor(b *testing.B) {
	b.ReportAllocs()
	for n := 0; n < b.N; n += benchSteps {
		if got := ctest.Chain(benchSteps); got != benchSteps {
			b.Fatalf("the chain ended with %d, want %d", got, benchSteps)
		}
	}
}

func TestCChainFloor(t *testing.T) {
	for _, n := range []int{0, 1, 3, benchSteps} {
		if got := ctest.Chain(n); got != int64(n) {
			t.Errorf("Chain(%d) = %d, want %d", n, got, n)
		}
	}
}

// BenchmarkCStepAlone is BenchmarkCStep/impl=c by itself: -bench cannot
// select impl=c without its impl=c/add=... children, and an instruction
// count (callgrind, two b.N) needs the one row alone.
func BenchmarkCStepAlone(b *testing.B) {
	benchFlow(b, func(root *engine.Steps) { ctest.Add(root, ctest.SpawnInc, benchSteps, 0) })
}
