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
