package abi_test

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/abi/internal/ctest"
	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// The benchmarks mirror engine's BenchmarkSequential: one root on a manual
// reactor driven from the benchmark goroutine, executed again and again
// with a chain of benchSteps steps; b.N counts steps, so ns/op is the cost
// of one step (adding it included). Sub-benchmarks are named impl=go /
// impl=c for benchstat.

const benchSteps = 1024

// benchFlow runs add+execute until b.N steps have run.
func benchFlow(b *testing.B, add func(root *engine.Steps)) {
	r := reactor.NewManual()
	root := engine.New(r)
	add(root) // warm
	root.Execute()
	r.RunUntilIdle()
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += benchSteps {
		add(root)
		root.Execute()
		r.RunUntilIdle()
	}
	b.StopTimer()
	if info := root.State().ErrorInfo; info != "" {
		b.Fatalf("the flow failed: %s", info)
	}
	root.Release()
}

func goSpawnInc(as *engine.Steps) {
	for i := 0; i < benchSteps; i++ {
		as.Add(goInc2)
	}
}

// BenchmarkCStep: steps that succeed with their two integer arguments + 1.
// impl=c: C steps (added by a C step, through the recording fast path);
// impl=c/add=go: C steps each added from Go through the vtable (one cgo
// call and one callback per add); impl=go: the same step in Go.
func BenchmarkCStep(b *testing.B) {
	b.Run("impl=go", func(b *testing.B) {
		benchFlow(b, func(root *engine.Steps) { root.Add(goSpawnInc) })
	})
	b.Run("impl=c", func(b *testing.B) {
		benchFlow(b, func(root *engine.Steps) { ctest.Add(root, ctest.SpawnInc, benchSteps, 0) })
	})
	b.Run("impl=c/add=AddC", func(b *testing.B) {
		benchFlow(b, func(root *engine.Steps) {
			for i := 0; i < benchSteps; i++ {
				ctest.AddGo(root, ctest.Inc, 0, 0)
			}
		})
	})
	b.Run("impl=c/add=go", func(b *testing.B) {
		benchFlow(b, func(root *engine.Steps) {
			for i := 0; i < benchSteps; i++ {
				ctest.Add(root, ctest.Inc, 0, 0)
			}
		})
	})
}

func goSpawnMixed(as *engine.Steps) {
	for i := 0; i < benchSteps; i += 2 {
		as.Add(goInc2)
		ctest.AddGo(as, ctest.Inc, 0, 0)
	}
}

// BenchmarkMixed: Go and C steps alternating (Go adds both, the C ones
// with abi.AddC), values crossing at every step; impl=go is the all-Go
// chain for reference.
func BenchmarkMixed(b *testing.B) {
	b.Run("impl=go", func(b *testing.B) {
		benchFlow(b, func(root *engine.Steps) { root.Add(goSpawnInc) })
	})
	b.Run("impl=go+c", func(b *testing.B) {
		benchFlow(b, func(root *engine.Steps) { root.Add(goSpawnMixed) })
	})
}

var (
	bigA = strings.Repeat("0123456789abcdef", 64)
	bigB = strings.Repeat("fedcba9876543210", 64)
)

// goBig4 is ArgsToC's step in Go: it checks the previous step's 1 KiB
// strings by address and succeeds with the same four values.
func goBig4(as *engine.Steps) {
	if as.Arg(3).Kind() == engine.KindStr {
		if unsafe.StringData(as.Arg(2).Str()) != unsafe.StringData(bigA) ||
			unsafe.StringData(as.Arg(3).Str()) != unsafe.StringData(bigB) {
			as.Error("Copied", "a string was copied between steps")
		}
	}
	as.Success(engine.Int(1), engine.Int(2), engine.Str(bigA), engine.Str(bigB))
}

func goSpawnBig4(as *engine.Steps) {
	for i := 0; i < benchSteps; i++ {
		as.Add(goBig4)
	}
}

// BenchmarkArgsToC: each step succeeds with 4 values, two of them 1 KiB
// strings, and the next step reads them; the C readers check that they see
// the producer's addresses (no byte copied).
func BenchmarkArgsToC(b *testing.B) {
	b.Run("impl=go", func(b *testing.B) {
		benchFlow(b, func(root *engine.Steps) { root.Add(goSpawnBig4) })
	})
	b.Run("impl=c", func(b *testing.B) {
		ctest.Reset()
		benchFlow(b, func(root *engine.Steps) { ctest.Add(root, ctest.SpawnBig4, benchSteps, 0) })
		if c := ctest.Count(); c.BigBad != 0 || c.BigOK == 0 {
			b.Fatalf("C readers: %d saw the producer's data, %d did not", c.BigOK, c.BigBad)
		}
	})
}

// BenchmarkCgoCall is the floor under a C step: one call of an empty C
// function from Go, on this machine, in the same run.
func BenchmarkCgoCall(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ctest.Noop()
	}
}
