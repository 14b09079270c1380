package abi_test

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/abi/internal/ctest"
	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Step functions for the allocation tests and benchmarks: top-level
// functions, so that adding them allocates no closure.

func goStart(as *engine.Steps) { as.Success(engine.Int(1), engine.Int(2)) }

func goInc2(as *engine.Steps) {
	as.Success(engine.Int(as.Arg(0).Int()+1), engine.Int(as.Arg(1).Int()+1))
}

// allocRun runs build+execute on one reused root, warm, and fails if a run
// allocates.
func allocRun(t *testing.T, build func(root *engine.Steps), check func(t *testing.T)) {
	t.Helper()
	ctest.Reset()
	r := reactor.NewManual()
	root := engine.New(r)
	run := func() {
		build(root)
		root.Execute()
		r.RunUntilIdle()
	}
	for i := 0; i < 20; i++ {
		run() // warm: image pools, frames, pins
	}
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Fatalf("%v allocations per run, want 0", n)
	}
	if info := root.State().ErrorInfo; info != "" {
		t.Fatalf("the flow failed: %s", info)
	}
	if check != nil {
		check(t)
	}
	root.Release()
	checkStats(t, r)
}

// TestAllocCStep: C steps added from Go and from C, each succeeding with
// two INT32 read from its args, allocate nothing once warm.
func TestAllocCStep(t *testing.T) {
	t.Run("added from Go", func(t *testing.T) {
		allocRun(t, func(root *engine.Steps) {
			for i := 0; i < 8; i++ {
				ctest.Add(root, ctest.Inc, 0, 0)
			}
		}, func(t *testing.T) {
			if a, b := ctest.IncSeen(); a != 7 || b != 7 {
				t.Fatalf("the last C step read %d %d, want 7 7", a, b)
			}
		})
	})
	t.Run("added from C", func(t *testing.T) {
		allocRun(t, func(root *engine.Steps) { ctest.Add(root, ctest.SpawnInc, 16, 0) }, func(t *testing.T) {
			if a, b := ctest.IncSeen(); a != 15 || b != 15 {
				t.Fatalf("the last C step read %d %d, want 15 15", a, b)
			}
		})
	})
}

// TestAllocGoCGo: Go -> C -> Go with values both ways allocates nothing.
func TestAllocGoCGo(t *testing.T) {
	allocRun(t, func(root *engine.Steps) {
		root.Add(goStart)
		ctest.Add(root, ctest.Inc, 0, 0)
		root.Add(goInc2)
		ctest.Add(root, ctest.Inc, 0, 0)
	}, func(t *testing.T) {
		if a, b := ctest.IncSeen(); a != 3 || b != 4 {
			t.Fatalf("the last C step read %d %d, want 3 4", a, b)
		}
	})
}

// TestAllocArgsToC: a C step succeeds with 4 values, two of them 1 KiB
// strings; the next C step finds the producer's very addresses (no byte
// copied) and nothing is allocated.
func TestAllocArgsToC(t *testing.T) {
	allocRun(t, func(root *engine.Steps) { ctest.Add(root, ctest.SpawnBig4, 8, 0) }, func(t *testing.T) {
		c := ctest.Count()
		if c.BigBad != 0 || c.BigOK != 7*(20+200+1) {
			t.Fatalf("C readers: %d saw the producer's data, %d did not; want %d, 0", c.BigOK, c.BigBad, 7*(20+200+1))
		}
	})
}

// TestAllocCStepsAddedOffLoop: a root built by the goroutine that holds it
// (off the loop, as with a manual reactor between runs) with many C steps,
// executed again and again, reaches a steady state: the images of its
// steps are reused, not made anew on every run.
func TestAllocCStepsAddedOffLoop(t *testing.T) {
	allocRun(t, func(root *engine.Steps) {
		for i := 0; i < 1024; i++ {
			ctest.Add(root, ctest.Inc, 0, 0)
		}
	}, nil)
}
