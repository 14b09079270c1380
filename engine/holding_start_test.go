package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// flow.holding stands for len(held) != 0 wherever the starts look
// (Execute on the loop, prepareStart, prepareStartSlow, startRootNow): a
// Hold sets it, Unhold clears it with the last key, and a kept flow whose
// run ended holding a key (a Hold never undone) is not started on the
// short paths, which would leave the key held into the next run; the slow
// start clears it. Each case runs a pooled root twice: first a step that
// holds keys and undoes some, then a step that asks Holds.
func TestHoldingFollowsHeld(t *testing.T) {
	SkipIfDebug(t) // released roots are never reused there: no pooled root keeps a flow
	type key struct{ n int }
	a, b := &key{1}, &key{2}
	for _, tc := range []struct {
		name   string
		hold   func(as *Steps)
		left   bool // the first run ends holding something
		onReal bool
	}{
		{"hold, unhold", func(as *Steps) { as.Hold(a); as.Unhold(a) }, false, false},
		{"two, one undone", func(as *Steps) { as.Hold(a); as.Hold(b); as.Unhold(a) }, true, false},
		{"two, both undone", func(as *Steps) { as.Hold(a); as.Hold(b); as.Unhold(b); as.Unhold(a) }, false, false},
		{"one left", func(as *Steps) { as.Hold(a) }, true, false},
		{"one left, parked real reactor", func(as *Steps) { as.Hold(a) }, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r *reactor.Reactor
			drive := func() {}
			if tc.onReal {
				r = reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin})
			} else {
				r = reactor.NewManual()
				drive = func() { r.RunUntilIdle() }
			}
			run := func(root *Steps, step func(as *Steps)) {
				t.Helper()
				root.Add(step)
				p := root.Promise()
				drive()
				if _, err := p.Wait(); err != nil {
					t.Fatalf("run: %v", err)
				}
			}
			// A pooled root (keepFlow), run once so that it has its flow.
			warm := make([]*Steps, 2*rootQuarantine)
			for i := range warm {
				warm[i] = New(r)
				run(warm[i], emptyStep)
			}
			for _, w := range warm {
				w.Release()
			}
			root := New(r)
			rt := rootOf(root)
			run(root, emptyStep)

			var during bool
			run(root, func(as *Steps) {
				tc.hold(as)
				during = as.fl.holding == (len(as.fl.held) != 0)
			})
			fl := rt.Steps.fl
			if !during || fl == nil || fl.holding != tc.left || (len(fl.held) != 0) != tc.left {
				t.Fatalf("after the first run: holding %v, %d held, in step consistent %v; want holding %v",
					fl != nil && fl.holding, len(fl.held), during, tc.left)
			}
			var holdsA, holdsB bool
			run(root, func(as *Steps) { holdsA, holdsB = as.Holds(a), as.Holds(b) })
			if holdsA || holdsB {
				t.Fatalf("the next run started holding a %v, b %v", holdsA, holdsB)
			}
			if fl := rt.Steps.fl; fl != nil && (fl.holding || len(fl.held) != 0) {
				t.Fatalf("after the next run: holding %v, %d held", fl.holding, len(fl.held))
			}
			root.Release()
		})
	}
}
