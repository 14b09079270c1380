package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A batch nested inside a flow's turn (a cancel handler, run inside
// runBatch, drives its manual reactor) spends a budget of its own: the
// outer flow's turn keeps what it had left, and Metrics.StepsRun counts
// every step once. The nested batch sets e.left for its own flows; left
// so, the outer turn would go on with a fresh budget (past turnBudget
// steps without a yield) and count the nested batch's steps a second
// time. Judged against the same flows with a handler that only queues
// the other flow (it runs later, in a batch of its own).
func TestRunBatchNestedKeepsOuterBudget(t *testing.T) {
	steps := func(drive bool) uint64 {
		r := reactor.NewManual()
		other := New(r)
		outer := New(r)
		e := reactor.X.Ext(r, extKey).(*engine)
		var x External
		outer.Add(func(as *Steps) {
			as.Add(func(as *Steps) {
				as.SetCancel(func(*Steps) {
					other.Add(func(*Steps) {})
					other.Add(func(*Steps) {})
					other.Add(func(*Steps) {})
					other.Execute()
					if drive {
						r.RunUntilIdle()
					}
				})
				x = as.External()
			})
		}, func(as *Steps, _ string) { as.Success() })
		outer.Add(func(*Steps) {})
		outer.Add(func(*Steps) {})
		r.Immediate(func() { outer.Execute() })
		r.RunUntilIdle()
		before := e.m.steps
		r.Immediate(func() { x.Error("Inner") })
		r.RunUntilIdle()
		if st := StatsOf(r); st.FramesLive != 0 {
			t.Fatalf("drive=%v: %d frames live after every flow ended", drive, st.FramesLive)
		}
		return e.m.steps - before
	}
	plain, nested := steps(false), steps(true)
	if plain == 0 || nested != plain {
		t.Fatalf("steps counted: %d with the nested batch, %d without; want the same, non-zero", nested, plain)
	}
}
