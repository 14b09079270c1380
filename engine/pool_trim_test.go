package engine_test

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// After a burst, idle pools give their
// frames and roots back within two trim periods, with no GC needed (an
// idle server has none); steady state keeps running without allocating
// more than it did.
func TestIdlePoolsShrinkAfterBurst(t *testing.T) {
	r := reactor.NewManual()
	const burst = 20000
	var xs []engine.External
	var roots []*engine.Steps
	for i := 0; i < burst; i++ {
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			as.Add(func(as *engine.Steps) { xs = append(xs, as.External()) })
		})
		root.Execute()
		roots = append(roots, root)
	}
	r.RunUntilIdle()
	for _, x := range xs {
		x.Success()
	}
	r.RunUntilIdle()
	for _, root := range roots {
		root.Release()
	}
	roots, xs = nil, nil
	peak := engine.StatsOf(r)
	if peak.FramesFree < burst {
		t.Fatalf("after the burst: %+v, want at least %d free frames", peak, burst)
	}
	steady := func() {
		root := engine.New(r)
		root.Add(func(as *engine.Steps) { as.Add(func(as *engine.Steps) {}) })
		root.Execute()
		r.RunUntilIdle()
		root.Release()
	}
	// Trim periods with steady work in between: the first trim measures,
	// the second drops what stayed unused. No GC runs here.
	for cycle := 0; cycle < 3; cycle++ {
		steady()
		r.Advance(time.Second + r.Tick())
	}
	st := engine.StatsOf(r)
	if peak.RootFlowsFree < burst {
		t.Fatalf("after the burst: %+v, want at least %d free root flows", peak, burst)
	}
	if st.FramesFree > 512 || st.RootFlowsFree > 512 || st.Trimmed < 2*burst {
		t.Fatalf("after idle trim periods: %+v (peak %+v), want the pools trimmed", st, peak)
	}
	for i := 0; i < 100; i++ {
		steady()
	}
	if s := engine.StatsOf(r); s.FramesLive != 0 || s.RootsLive != 0 {
		t.Fatalf("steady state after trimming: %+v", s)
	}
}
