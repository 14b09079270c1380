package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A success with no values empties the flow's slots through resetArgs,
// leaving the flow narrow (setArgs), so that the end's emptiness test and
// the next start's reset read slot 0 alone. Whatever values the step
// before left, and whichever way the result comes in, the next step must
// see none, the flow's slots must all be empty and the mailbox clear, and
// the end's argsClear must agree with the slots.
func TestEmptySuccessLeavesNoValues(t *testing.T) {
	SkipIfDebug(t) // the case "pooled root" needs a root reused from the pool
	prior := []struct {
		name string
		vals []Value
	}{
		{"none", nil},
		{"one", []Value{Int(1)}},
		{"two", []Value{Int(1), Str("two")}},
		{"four", []Value{Int(1), Str("two"), Int(3), Str("four")}},
	}
	// how completes the waiting step: from the test goroutine between
	// drives of a manual reactor (a post: deliverClaimed), or from the
	// step's own callback (on the loop: apply's empty success).
	hows := []string{"posted", "in callback"}
	r := reactor.NewManual()
	for _, p := range prior {
		for _, how := range hows {
			t.Run(p.name+"/"+how, func(t *testing.T) {
				for run := range 3 { // again on the same root: a kept flow's second and third runs
					root := New(r)
					rt := rootOf(root)
					var slot External
					got, ran := -1, false
					var gotVals [MaxArgs]Value
					root.Add(func(as *Steps) {
						if len(p.vals) > 0 {
							as.Success(p.vals...)
						}
					})
					root.Add(func(as *Steps) {
						slot = as.External()
						if how == "in callback" {
							if !slot.Success() {
								t.Error("Success in the callback returned false")
							}
						}
					})
					root.Add(func(as *Steps) {
						ran = true
						got = as.Args().Len()
						for i := range gotVals {
							gotVals[i] = as.Arg(i)
						}
					})
					root.Execute()
					r.RunUntilIdle()
					if how == "posted" {
						if ran {
							t.Fatal("the third step ran before the External finished")
						}
						if !slot.Success() {
							t.Fatal("Success from the test goroutine returned false")
						}
						r.RunUntilIdle()
					}
					if !ran {
						t.Fatalf("run %d: the step after the External never ran", run)
					}
					if got != 0 {
						t.Fatalf("run %d: the step after an empty success saw %d values, want 0", run, got)
					}
					for i, v := range gotVals {
						if v != (Value{}) {
							t.Fatalf("run %d: slot %d holds %v after an empty success", run, i, v)
						}
					}
					if rt.running() {
						t.Fatal("the flow did not end")
					}
					if fl := rt.Steps.fl; fl != nil {
						if !fl.args.empty() {
							t.Fatal("the kept flow holds values after an empty end")
						}
						if fl.xcode != "" || !fl.xargs.empty() || fl.xpass || fl.xerr != nil {
							t.Fatal("the mailbox is not clear at rest")
						}
					}
					root.Release()
				}
			})
		}
	}
}

// A posted empty success that a Cancel overtakes is dropped: the claim is
// the canceler's (disarm), deliverClaimed's CompareAndSwap fails, and no
// later step runs. The flow ends Canceled with its values as they were
// dropped by the end, and the root runs again cleanly.
func TestEmptySuccessOvertakenByCancel(t *testing.T) {
	r := reactor.NewManual()
	root := New(r)
	var slot External
	after, canceled := 0, 0
	root.Add(func(as *Steps) { as.Success(Int(1), Int(2), Int(3)) })
	root.Add(func(as *Steps) {
		slot = as.External()
		as.SetCancel(func(*Steps) { canceled++ })
	})
	root.Add(func(as *Steps) { after++ })
	p := root.Promise()
	root.Execute()
	r.RunUntilIdle()
	if !slot.Success() {
		t.Fatal("Success returned false while the step waited")
	}
	root.Cancel()
	r.RunUntilIdle()
	if _, err := p.Wait(); err == nil {
		t.Fatal("the canceled flow ended without an error")
	}
	if after != 0 {
		t.Fatalf("the step after a canceled External ran %d times", after)
	}
	if canceled != 1 {
		t.Fatalf("cancel handler ran %d times, want 1", canceled)
	}
	if slot.Success() {
		t.Fatal("a second Success on the dropped claim reported true")
	}
	// The same root again: the dropped claim left nothing behind.
	ran := 0
	root.Add(func(as *Steps) {
		if as.Args().Len() != 0 {
			t.Errorf("a fresh run starts with %d values", as.Args().Len())
		}
		ran++
	})
	root.Execute()
	r.RunUntilIdle()
	if ran != 1 {
		t.Fatalf("the root's next run ran its step %d times", ran)
	}
	root.Release()
}
