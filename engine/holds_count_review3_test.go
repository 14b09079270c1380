package engine_test

import (
	"slices"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// The count of entered sections (engine.FlowLocked) that lets Holds skip
// its walk must come back to exactly what encloses a step however an
// inner section ends: Break and Continue out of it, a panic in it, a
// panicking Leave, a cancel of its flow (the pooled root's flow, kept
// for the next run, starts at 0), a failing parallel branch that cancels
// a sibling inside a section. An outer section stays held (Holds true)
// through all of them: a count too low would let a reentrant Mutex or
// Limiter deadlock or enter twice.
func TestHoldsCountAfterAbnormalEnds(t *testing.T) {
	r := reactor.NewManual()
	outer, inner := newSlot(nil), newSlot(nil)
	type seen struct {
		where  string
		locked int
		holds  bool
	}
	var got []seen
	check := func(where string) engine.ExecFunc {
		return func(as *engine.Steps) {
			got = append(got, seen{where, engine.FlowLocked(as), as.Holds(outer)})
		}
	}
	recovered := func(as *engine.Steps, code string) { as.Success() }

	root := engine.New(r)
	root.Sync(outer, func(as *engine.Steps) {
		as.Repeat(2, func(as *engine.Steps, i int) {
			as.Sync(inner, func(as *engine.Steps) {
				if i == 0 {
					as.Continue()
				}
				as.Break()
			})
		})
		as.Add(check("after break/continue"))
		as.Add(func(as *engine.Steps) {
			as.Sync(inner, func(as *engine.Steps) { panic("boom") })
		}, recovered)
		as.Add(check("after panic"))
		as.Add(func(as *engine.Steps) {
			as.Parallel().
				Add(func(as *engine.Steps) {
					as.Sync(inner, func(as *engine.Steps) { as.External() })
				}).
				Add(func(as *engine.Steps) { as.Error("Boom") })
		}, recovered)
		as.Add(check("after branch canceled in a section"))
	})
	root.Add(check("after outer"))
	p := root.Promise()
	r.RunUntilIdle()
	_, err := waitDone(t, p)
	wantNoErr(t, err)

	// A pooled root canceled inside two sections: its kept flow starts
	// its next run counting none.
	pooled := engine.New(r)
	var ref engine.Ref
	pooled.Sync(outer, func(as *engine.Steps) {
		as.Sync(inner, func(as *engine.Steps) { check("before cancel")(as); as.External() })
	})
	ref = pooled.Ref()
	pooled.Execute()
	r.RunUntilIdle()
	ref.Cancel()
	r.RunUntilIdle()
	for run := 0; run < 2; run++ {
		pooled.Sync(outer, check("rerun"))
		pooled.Add(check("rerun after"))
		pooled.Execute()
		r.RunUntilIdle()
	}
	if outer.inside != 0 || inner.inside != 0 {
		t.Errorf("inside outer %d inner %d after all ended, want 0 0", outer.inside, inner.inside)
	}

	want := []seen{
		{"after break/continue", 1, true}, {"after panic", 1, true},
		{"after branch canceled in a section", 1, true}, {"after outer", 0, false},
		{"before cancel", 2, true},
		{"rerun", 1, true}, {"rerun after", 0, false}, {"rerun", 1, true}, {"rerun after", 0, false},
	}
	if !slices.Equal(got, want) {
		t.Errorf("count and Holds seen\n got %v\nwant %v", got, want)
	}
}
