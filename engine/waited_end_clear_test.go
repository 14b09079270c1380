package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// TestWaitedEndEmptiesKeptFlow: a Promise's or a Batch's success copies the
// flow's values out and empties the pooled root's kept flow on the loop
// (endRunWaited), with argsClear set so that Release reads nothing of the
// flow. The copy is exact whether the success set one value (narrow: only
// slot 0 is copied into the fresh Promise) or several, it outlives the
// root's Release and the next owner's run, and an end that does not copy
// (an error) leaves argsClear false.
func TestWaitedEndEmptiesKeptFlow(t *testing.T) {
	SkipIfDebug(t) // released roots are never reused there: no pooled root keeps a flow
	cases := []struct {
		name  string
		vals  []Value
		batch bool
	}{
		{"promise, none", nil, false},
		{"promise, one", []Value{Int(7)}, false},
		{"promise, two", []Value{Int(7), Str("x")}, false},
		{"promise, four", []Value{Int(1), Int(2), Int(3), Int(4)}, false},
		{"batch, one", []Value{Int(7)}, true},
		{"batch, three", []Value{Int(7), Int(8), Int(9)}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reactor.NewManual()
			root := pooledRoot(t, r)
			rt := rootOf(root)
			// A wide success first, so that a narrow one after it must
			// still leave the copy exact (narrow is set again by setArg1).
			root.Add(func(as *Steps) { as.Success(Int(-1), Int(-2), Int(-3), Int(-4)) })
			root.Add(func(as *Steps) { as.Success(c.vals...) })
			var got *Args
			if c.batch {
				var b Batch
				b.Add(root)
				b.Execute()
				r.RunUntilIdle()
				b.Wait()
				a, err := b.Result(0)
				if err != nil {
					t.Fatalf("Batch.Result: %v", err)
				}
				got = a
			} else {
				p := root.Promise()
				r.RunUntilIdle()
				a, err := p.Wait()
				if err != nil {
					t.Fatalf("Wait: %v", err)
				}
				got = a
			}
			if !rt.argsClear {
				t.Fatal("a waited success left argsClear false: Release would read the flow")
			}
			if fl := rt.Steps.fl; fl == nil || !fl.args.empty() {
				t.Fatal("a waited success left values in the kept flow")
			}
			check := func(when string) {
				t.Helper()
				if got.Len() != len(c.vals) {
					t.Fatalf("%s: Len %d, want %d (%+v)", when, got.Len(), len(c.vals), got.v)
				}
				for i, v := range c.vals {
					if got.At(i) != v {
						t.Fatalf("%s: value %d is %+v, want %+v", when, i, got.At(i), v)
					}
				}
			}
			check("at the end")
			if c.batch {
				root.Release()
				return // a Batch's results are its own memory, reused by its next run
			}
			root.Release()
			// The next owner of the same memory runs with other values.
			again := New(r)
			again.Add(func(as *Steps) { as.Success(Int(99), Int(98)) })
			pa := again.Promise()
			r.RunUntilIdle()
			if a, err := pa.Wait(); err != nil || a.Len() != 2 || a.At(0) != Int(99) {
				t.Fatalf("the next run's Promise: %v, %v", a, err)
			}
			again.Release()
			check("after Release and another run")
		})
	}

	t.Run("error", func(t *testing.T) {
		r := reactor.NewManual()
		root := pooledRoot(t, r)
		rt := rootOf(root)
		root.Add(func(as *Steps) { as.Success(Int(7)) })
		root.Add(func(as *Steps) { as.Error("Failed") })
		p := root.Promise()
		r.RunUntilIdle()
		if _, err := p.Wait(); err == nil {
			t.Fatal("the flow's error was not reported")
		}
		if rt.argsClear {
			t.Fatal("an error's end set argsClear")
		}
		root.Release()
		if fl := rt.Steps.fl; fl != nil && !fl.args.empty() {
			t.Fatalf("Release pooled the root with its flow's values: %+v", fl.args.v)
		}
	})
}

// pooledRoot returns a root of r that came from Release's pool, so that it
// keeps its flow (keepFlow), and has run once.
func pooledRoot(t *testing.T, r *reactor.Reactor) *Steps {
	t.Helper()
	warmRootPool(r)
	root := New(r)
	if !rootOf(root).keepFlow {
		t.Fatal("the root did not come from the pool")
	}
	root.Add(emptyStep)
	root.Execute()
	r.RunUntilIdle()
	return root
}

// warmRootPool runs and releases roots of r past the pool's quarantine,
// so that the next New(r) comes from Release's pool and keeps its flow
// (keepFlow).
func warmRootPool(r *reactor.Reactor) {
	var warm [2 * rootQuarantine]*Steps
	for i := range warm {
		warm[i] = New(r)
		warm[i].Add(emptyStep)
		warm[i].Execute()
	}
	r.RunUntilIdle()
	for _, w := range warm {
		w.Release()
	}
}
