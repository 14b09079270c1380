package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// root.argsClear lets Release skip the kept flow's values. It may be true
// only right after finishRoot's plain end found the flow empty: every
// other end (an error, a cancel, a Promise's, advanceFast's) must clear
// it, or a root run again without a Release in between would be pooled
// still holding its values (pinning what they point to, and handing them
// to the root's next life). Each case runs the root once so that argsClear
// is set, runs it again through another end that leaves values in the
// kept flow, releases it, and looks at the pooled flow.
func TestArgsClearNeverStale(t *testing.T) {
	SkipIfDebug(t) // released roots are never reused there: no pooled root keeps a flow
	r := reactor.NewManual()
	var slot External
	wait := func(as *Steps) { slot = as.External() }
	seven := func(as *Steps) { as.Success(Int(7)) }

	cases := []struct {
		name string
		// second builds and runs the root's second run to its end; it
		// must leave values in the kept flow.
		second func(root *Steps)
	}{
		{"error", func(root *Steps) {
			root.Add(seven)
			root.Add(func(as *Steps) { as.Error("Failed") })
			root.Execute()
			r.RunUntilIdle()
		}},
		{"cancel", func(root *Steps) {
			root.Add(seven)
			root.Add(wait)
			root.Execute()
			r.RunUntilIdle()
			root.Cancel()
			r.RunUntilIdle()
		}},
		{"promise", func(root *Steps) {
			root.Add(wait)
			p := root.Promise()
			root.Execute()
			r.RunUntilIdle()
			slot.Success(Int(7))
			r.RunUntilIdle()
			if _, err := p.Wait(); err != nil {
				t.Fatalf("promise: %v", err)
			}
		}},
		{"plain end with a value", func(root *Steps) {
			root.Add(wait)
			root.Execute()
			r.RunUntilIdle()
			slot.Success(Int(7))
			r.RunUntilIdle()
		}},
		{"last step on the loop", func(root *Steps) {
			root.Add(seven)
			root.Execute()
			r.RunUntilIdle()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			warmRootPool(r)

			root := New(r)
			rt := rootOf(root)
			if !rt.keepFlow {
				t.Fatal("the root did not come from the pool")
			}
			// First run: a completion from elsewhere, no values: the
			// plain end sets argsClear.
			root.Add(wait)
			root.Execute()
			r.RunUntilIdle()
			slot.Success()
			r.RunUntilIdle()
			if rt.running() {
				t.Fatal("first run did not end")
			}
			if !rt.argsClear {
				t.Fatal("the plain end of an empty flow did not set argsClear: Release would read the flow")
			}

			c.second(root)
			if rt.running() {
				t.Fatal("second run did not end")
			}
			fl := rt.Steps.fl
			if fl == nil || fl.args.empty() {
				t.Skip("the second run left no values with the root: nothing to check")
			}
			if rt.argsClear {
				t.Fatal("argsClear still true after an end that left values in the flow")
			}
			root.Release()
			if !fl.args.empty() {
				t.Fatalf("Release pooled the root with its flow's values: %+v", fl.args.v)
			}
		})
	}
}
