package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// BenchmarkKeptRoot is a server's request flow (stepsd's shape): one pooled
// root run again and again on the loop, one empty step each run, executed
// from a loop callback and run at once by RunReady, as a network handler
// does for each request of a read:
//
//	name=none    unnamed: prepareStart's and finishRoot's short paths
//	name=one     every run named alike: the named root's start and end
//	             (per-name metrics), the label set once per run's turn
//	name=switch  two names take turns (SET, GET): the same, and the
//	             flow label switches at every run
//
// The difference between name=none and name=one is the price of naming a
// request's flow (profiles/notes/2026-11-27-glue-round5.md).
func BenchmarkKeptRoot(b *testing.B) {
	names := [2]*Name{NewName("bench-kept-a"), NewName("bench-kept-b")}
	modes := []struct {
		mode  string
		names [2]*Name
	}{
		{"name=none", [2]*Name{}},
		{"name=one", [2]*Name{names[0], names[0]}},
		{"name=switch", names},
	}
	for _, m := range modes {
		b.Run(m.mode, func(b *testing.B) {
			r := reactor.NewManual()
			root := New(r)
			var cur *Name // stepsd keeps the name it set beside the root
			ran := 0
			step := func(*Steps) { ran++ }
			op := func(i int) {
				if n := m.names[i&1]; cur != n {
					root.SetFlowName(n)
					cur = n
				}
				root.Add(step)
				root.Execute()
				RunReady(r)
			}
			r.Immediate(func() {
				for i := range 1000 {
					op(i)
				}
				ran = 0
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					op(i)
				}
				b.StopTimer()
			})
			r.RunUntilIdle()
			root.Release()
			if ran != b.N {
				b.Fatalf("%d of %d runs ran their step", ran, b.N)
			}
		})
	}
}
