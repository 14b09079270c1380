package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// TestWaitedEndKeepsOwnedValues: a Promise's or a Batch's success whose
// values include a bridge's owned value (the C ABI's) is not emptied at
// the run's end (endRunWaited empties only a flow that holds none): the
// Promise's copy points at what the owned value owns, so the kept flow
// holds it, undropped, until the root is released or run again, and
// drops it then, once. argsClear stays false, so that Release looks.
func TestWaitedEndKeepsOwnedValues(t *testing.T) {
	SkipIfDebug(t) // released roots are never reused there: no pooled root keeps a flow
	installTestBridge()
	owned := func(n uint64) Value { return xBinaryValue(testOwnedP, n, nil, 0, KindInt, true) }
	for _, batch := range []bool{false, true} {
		for _, tc := range []struct {
			name string
			vals []Value
		}{
			{"one owned", []Value{owned(7)}},               // narrow: slot 0 alone is copied
			{"plain and owned", []Value{Int(1), owned(8)}}, // wide
		} {
			for _, again := range []bool{false, true} {
				name := tc.name + ", released"
				if again {
					name = tc.name + ", run again"
				}
				if batch {
					name = "batch, " + name
				}
				t.Run(name, func(t *testing.T) {
					r := reactor.NewManual()
					root := pooledRoot(t, r)
					rt := rootOf(root)
					root.Add(func(as *Steps) {
						xTakeOwned(as) // as the bridge does before it succeeds with owned values
						as.Success(tc.vals...)
					})
					before := testOwnedDropped.Load()
					var got *Args
					var err error
					if batch {
						var b Batch
						b.Add(root)
						b.Execute()
						r.RunUntilIdle()
						b.Wait()
						got, err = b.Result(0)
					} else {
						p := root.Promise()
						r.RunUntilIdle()
						got, err = p.Wait()
					}
					if err != nil {
						t.Fatalf("the flow's result: %v", err)
					}
					if got.Len() != len(tc.vals) {
						t.Fatalf("%d values %+v, want %d", got.Len(), got.v, len(tc.vals))
					}
					for i, v := range tc.vals {
						if got.At(i) != v {
							t.Fatalf("value %d is %+v, want %+v", i, got.At(i), v)
						}
					}
					if n := testOwnedDropped.Load() - before; n != 0 {
						t.Fatalf("the run's end dropped %d owned values the result still points at", n)
					}
					if rt.argsClear {
						t.Fatal("argsClear set after an end that left owned values with the root: Release would not drop them")
					}
					if fl := rt.Steps.fl; fl == nil || !fl.args.hasOwned() {
						t.Fatal("the kept flow lost the owned value without dropping it")
					}
					if again {
						root.Add(emptyStep)
						root.Execute()
						r.RunUntilIdle()
					}
					root.Release()
					if n := testOwnedDropped.Load() - before; n != 1 {
						t.Fatalf("the owned value was dropped %d times by the next run and Release, want 1", n)
					}
				})
			}
		}
	}
}
