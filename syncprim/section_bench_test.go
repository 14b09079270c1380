package syncprim

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// BenchmarkRequestSection is a server request's flow in stepsd's shape: one
// pooled root run again and again from a loop callback (RunReady runs it at
// once), its one step a section entered by calling the object's Sync on the
// root itself (stepsd: Limiter.Sync(root, execStep, serveError)):
//
//	impl=plain      the section's step added plainly (no object)
//	impl=mutex      a Mutex of 256 slots (max > 1: the reentrance check runs)
//	impl=limiter    a Limiter of 256 slots and an unbounded rate (stepsd's)
//	impl=limiter1   a Limiter of one slot (no reentrance check: a flow that
//	                holds it finds no free slot)
//
// impl=limiter less impl=plain is what the Limiter adds to a request
// (profiles/notes/2026-11-27-glue-round5.md).
func BenchmarkRequestSection(b *testing.B) {
	impls := []struct {
		name string
		obj  func(r *reactor.Reactor) engine.Sync
	}{
		{"plain", nil},
		{"mutex", func(*reactor.Reactor) engine.Sync { return NewMutex(256, 0) }},
		{"limiter", func(r *reactor.Reactor) engine.Sync {
			return NewLimiter(r, LimiterOptions{Concurrent: 256, MaxQueue: 1024, Rate: 1 << 30, Period: time.Hour})
		}},
		{"limiter1", func(r *reactor.Reactor) engine.Sync {
			return NewLimiter(r, LimiterOptions{Concurrent: 1, Rate: 1 << 30, Period: time.Hour})
		}},
	}
	for _, impl := range impls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			r := reactor.NewManual()
			ran := 0
			section := func(*engine.Steps) { ran++ }
			onerror := func(as *engine.Steps, code string) { b.Errorf("section failed: %s", code) }
			root := engine.New(r)
			add := func() { root.Add(section, onerror) }
			if impl.obj != nil {
				obj := impl.obj(r)
				add = func() { obj.Sync(root, section, onerror) }
			}
			op := func() {
				add()
				root.Execute()
				engine.RunReady(r)
			}
			r.Immediate(func() {
				for range 1000 {
					op()
				}
				ran = 0
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					op()
				}
				b.StopTimer()
			})
			r.RunUntilIdle()
			root.Release()
			if ran != b.N {
				b.Fatalf("%d of %d sections ran", ran, b.N)
			}
		})
	}
}
