package engine_test

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// RunReady from a cancel handler run by a Cancel (a posted task, outside
// the engine's own run of the flows) must not run flows while the
// engine is in the middle of canceling: a sibling branch made ready in the
// same iteration would end (branchDone: its flow back to the pool) under
// cancelBranches, which then cancels and pools it a second time.
func TestRunReadyFromCancelHandler(t *testing.T) {
	r := reactor.NewManual()
	var extB engine.External
	var nested bool
	root := engine.New(r)
	p := root.Parallel()
	p.Add(func(as *engine.Steps) {
		as.SetCancel(func(*engine.Steps) { nested = engine.RunReady(r) || nested })
	})
	p.Add(func(as *engine.Steps) { extB = as.External() })
	pr := root.Promise()
	r.RunUntilIdle()
	extB.Success() // B ready ...
	root.Cancel()  // ... and canceled in the same iteration
	r.RunUntilIdle()
	_, err := waitDone(t, pr)
	wantCode(t, err, engine.Canceled)
	if st := engine.StatsOf(r); st.FlowsLive != 0 {
		t.Errorf("FlowsLive = %d after the flow ended, want 0", st.FlowsLive)
	}
	// The pools are sound: two parallel flows with two branches each run
	// at once and both see both their branches.
	var ran [2]int
	var exts [4]engine.External
	var ps [2]*engine.Promise
	for i := range 2 {
		rt := engine.New(r)
		pp := rt.Parallel()
		for j := range 2 {
			pp.Add(func(as *engine.Steps) { ran[i]++; exts[2*i+j] = as.External() })
		}
		ps[i] = rt.Promise()
	}
	r.RunUntilIdle()
	for _, x := range exts {
		x.Success()
	}
	r.RunUntilIdle()
	for i := range 2 {
		_, err := waitDone(t, ps[i])
		wantNoErr(t, err)
		if ran[i] != 2 {
			t.Errorf("flow %d ran %d branches, want 2", i, ran[i])
		}
	}
	if st := engine.StatsOf(r); st.FlowsLive != 0 {
		t.Errorf("FlowsLive = %d after the flows ended, want 0", st.FlowsLive)
	}
}
