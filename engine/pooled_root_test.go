package engine_test

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A pooled root started and ended on the loop takes the engine's short
// paths (prepareStart, finishRoot, release: a root that keeps its flow,
// with no extension). They must be invisible: each way a flow can go
// ends as it does for any root, and leaves no frame or root behind.
func TestPooledRootOnLoopRunsLikeAnyRoot(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, r *reactor.Reactor)
	}{
		{"success, executed again, released", func(t *testing.T, r *reactor.Reactor) {
			root, ran := engine.New(r), 0
			for i := 0; i < 3; i++ {
				root.Add(func(*engine.Steps) { ran++ })
				root.Execute()
				r.RunUntilIdle()
				if root.Executing() {
					t.Fatalf("run %d: still executing after its only step", i)
				}
			}
			root.Release()
			if ran != 3 {
				t.Fatalf("step ran %d times, want 3", ran)
			}
		}},
		{"two steps", func(t *testing.T, r *reactor.Reactor) {
			root, order := engine.New(r), ""
			root.Add(func(*engine.Steps) { order += "a" })
			root.Add(func(*engine.Steps) { order += "b" })
			root.Execute()
			r.RunUntilIdle()
			root.Release()
			if order != "ab" {
				t.Fatalf("steps ran %q, want \"ab\"", order)
			}
		}},
		{"canceled before its start", func(t *testing.T, r *reactor.Reactor) {
			// A flow ready ahead of it (an External's result) keeps its
			// Execute from running it at once: it is queued, and the
			// cancel comes before its step.
			ahead := engine.New(r)
			var ext engine.External
			ahead.Add(func(as *engine.Steps) { ext = as.External() })
			ahead.Execute() // runs to its wait
			ext.Success()   // ready again: queued
			root, ran := engine.New(r), false
			root.Add(func(*engine.Steps) { ran = true })
			root.Execute()
			root.Cancel()
			r.RunUntilIdle()
			if ran || root.Executing() || ahead.Executing() {
				t.Fatalf("canceled flow: step ran %v, executing %v; the flow ahead executing %v", ran, root.Executing(), ahead.Executing())
			}
			root.Release()
			ahead.Release()
		}},
		{"released while waiting", func(t *testing.T, r *reactor.Reactor) {
			root, canceled := engine.New(r), false
			root.Add(func(as *engine.Steps) {
				as.SetCancel(func(*engine.Steps) { canceled = true })
				as.WaitExternal()
			})
			root.Execute()
			r.RunUntilIdle()
			ref := root.Ref()
			root.Release()
			r.RunUntilIdle()
			if !canceled || ref.Valid() {
				t.Fatalf("Release of a waiting flow: cancel handler ran %v, Ref valid %v", canceled, ref.Valid())
			}
		}},
		{"ended by its step's error", func(t *testing.T, r *reactor.Reactor) {
			root, after := engine.New(r), false
			root.Add(func(as *engine.Steps) { as.Error("Oops", "") })
			root.Add(func(*engine.Steps) { after = true })
			root.Execute()
			r.RunUntilIdle()
			if after || root.Executing() {
				t.Fatalf("failed flow: next step ran %v, executing %v", after, root.Executing())
			}
			root.Release()
		}},
	}
	r := reactor.NewManual()
	onLoop := func(fn func()) {
		r.Immediate(fn)
		r.RunUntilIdle()
	}
	// Cycle roots through the loop's pool past its quarantine: from here
	// on New hands out roots that keep their flow between runs.
	onLoop(func() {
		for i := 0; i < 32; i++ {
			root := engine.New(r)
			root.Add(func(*engine.Steps) {})
			root.Execute()
			r.RunUntilIdle()
			root.Release()
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i := 0; i < 20; i++ { // every root of the pool's cycle, twice over
				onLoop(func() { c.run(t, r) })
			}
			var s engine.Stats
			onLoop(func() { s = engine.StatsOf(r) })
			if s.FramesLive != 0 || s.RootsLive != 0 || s.FlowsLive != 0 {
				t.Fatalf("left behind: %+v", s)
			}
		})
	}
}
