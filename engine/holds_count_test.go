package engine_test

import (
	"slices"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Holds answers false without a walk while its flow's count of entered
// sections (engine.FlowLocked) is 0 and it holds nothing: the count must
// follow every way a section is entered and left. It is 1 inside a section
// (entered at once or let in through Lock.Wait), in its sub-steps and in a
// reentrance passed through, 0 in a parallel branch under it, and back to
// 0 after the section succeeds, fails (recovered outside), times out, or
// waits and is let in; Holds stays true wherever the count says so.
func TestHoldsCountFollowsSections(t *testing.T) {
	r := reactor.NewManual()
	s := newSlot(nil)
	ts := newTurnstile(nil)
	type seen struct {
		where  string
		locked int
		holds  bool
	}
	var got []seen
	check := func(where string) engine.ExecFunc {
		return func(as *engine.Steps) {
			got = append(got, seen{where, engine.FlowLocked(as), as.Holds(s) || as.Holds(ts)})
		}
	}
	recovered := func(as *engine.Steps, code string) { as.Success() }

	// A flow that holds ts until ext passes, so that root's Sync on ts waits.
	var ext engine.External
	holder := engine.New(r)
	holder.Sync(ts, func(as *engine.Steps) { ext = as.External() })
	hp := holder.Promise()
	r.RunUntilIdle()

	root := engine.New(r)
	root.Sync(s, func(as *engine.Steps) {
		check("section")(as)
		as.Sync(s, check("reentrance")) // slot's slow path: a plain sub-step
		as.Add(check("sub-step"))
		as.Parallel().Add(check("branch"))
	})
	root.Add(check("after success"))
	root.Add(func(as *engine.Steps) {
		as.Sync(s, func(as *engine.Steps) { as.Add(func(as *engine.Steps) { as.Error("Boom") }) })
	}, recovered)
	root.Add(check("after error"))
	root.Add(func(as *engine.Steps) {
		as.Sync(s, func(as *engine.Steps) { as.SetTimeout(time.Millisecond) })
	}, recovered)
	root.Add(check("after timeout"))
	root.Sync(ts, check("let in"))
	root.Add(check("after wait"))
	p := root.Promise()
	r.RunUntilIdle()
	r.Advance(2 * time.Millisecond)
	r.RunUntilIdle()
	ext.Success()
	r.RunUntilIdle()
	_, err := waitDone(t, hp)
	wantNoErr(t, err)
	_, err = waitDone(t, p)
	wantNoErr(t, err)

	want := []seen{
		{"section", 1, true}, {"reentrance", 1, true}, {"sub-step", 1, true}, {"branch", 0, false},
		{"after success", 0, false}, {"after error", 0, false}, {"after timeout", 0, false},
		{"let in", 1, true}, {"after wait", 0, false},
	}
	if !slices.Equal(got, want) {
		t.Errorf("count and Holds seen\n got %v\nwant %v", got, want)
	}
}

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
