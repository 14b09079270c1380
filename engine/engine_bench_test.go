package engine

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// These benchmarks are the engine-side halves of bench/'s scenarios, kept
// here so `go test -bench` in the package profiles the engine alone.

func BenchmarkSimple(b *testing.B) {
	r := reactor.NewManual()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		root := New(r)
		root.Add(emptyStep)
		root.Execute()
		r.RunUntilIdle()
		root.Release()
	}
}

func BenchmarkSequential(b *testing.B) { benchSequential(b, incStep) }

// benchSequential runs rounds of 1024 steps, each step, on one reused
// root: b.N counts steps.
func benchSequential(b *testing.B, step ExecFunc) {
	const steps = 1024
	r := reactor.NewManual()
	root := New(r)
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += steps {
		for i := 0; i < steps; i++ {
			root.Add(step)
		}
		root.Execute()
		r.RunUntilIdle()
	}
}

func BenchmarkParallelExternal(b *testing.B) {
	const flows = 30000
	r := reactor.NewManual()
	exts := make([]External, flows)
	var n int
	step := func(as *Steps) { exts[n] = as.External(); n++ }
	roots := make([]*Steps, flows)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += flows {
		n = 0
		for i := range roots {
			roots[i] = New(r)
			roots[i].Add(step)
			roots[i].Execute()
		}
		r.RunUntilIdle()
		for i := 0; i < n; i++ {
			exts[i].Success()
		}
		r.RunUntilIdle()
		for _, root := range roots {
			root.Release()
		}
	}
}

func BenchmarkParallelWaitLoop(b *testing.B) {
	const flows = 30000
	r := reactor.NewManual()
	exts := make([]External, flows)
	var n int
	body := func(as *Steps) { exts[n] = as.External(); n++ }
	for i := 0; i < flows; i++ {
		root := New(r)
		root.Loop(body)
		root.Execute()
	}
	r.RunUntilIdle()
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += flows {
		m := n
		n = 0
		for i := 0; i < m; i++ {
			exts[i].Success()
		}
		r.RunUntilIdle()
	}
}

func BenchmarkTimeout(b *testing.B) {
	r := reactor.NewManual()
	var ext External
	step := func(as *Steps) { as.SetTimeout(time.Second); ext = as.External() }
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		root := New(r)
		root.Add(step)
		root.Execute()
		r.RunUntilIdle()
		ext.Success()
		r.RunUntilIdle()
		root.Release()
	}
}
