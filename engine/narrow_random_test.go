package engine

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// TestNarrowInvariantRandom runs pseudo-random flows (a fixed seed) on a
// few roots that are run again and released and taken from the pool, so
// that their kept flows go through every way of setting and emptying
// args one after another: Success with 0-4 values, an implicit success,
// Pass, an External finished in its own callback, by another root's step
// on the loop or from another goroutine (Success with 0-4 values, or
// Pass), SuccessStep, ForwardArgs into a sub-step, a Parallel step, a
// Repeat, an error handler's Success; each run executed from the test
// goroutine, from a loop callback (Execute's on-loop start) or by
// Promise. At every step's entry and at every
// end it checks flow.narrow's invariant (slots 1-3 empty when it is set:
// the start's reset, the end's emptiness test and Release read slot 0
// alone then) and what the step sees against a model; at each end the
// Promise's values and argsClear; after each Release the kept flow holds
// nothing (a pooled root must pin no value, nor hand one to its next
// life).
func TestNarrowInvariantRandom(t *testing.T) {
	SkipIfDebug(t) // the pooled roots and kept flows are what is tested
	r := reactor.NewManual()
	rng := rand.New(rand.NewPCG(19, 25))
	serial := 0
	vals := func(n int) []Value {
		v := make([]Value, n)
		for i := range v {
			serial++
			if i < n-1 && serial%5 == 0 {
				continue // a KindNone before the last value: Len still counts it
			} else if i%2 == 0 {
				v[i] = Str("v" + strconv.Itoa(serial)) // a pointer the GC follows
			} else {
				v[i] = Int(int64(serial))
			}
		}
		return v
	}
	checkFlow := func(where string, fl *flow) {
		t.Helper()
		if fl == nil {
			return
		}
		if fl.narrow && (fl.args.v[1] != Value{} || fl.args.v[2] != Value{} || fl.args.v[3] != Value{}) {
			t.Fatalf("%s: narrow set with slots 1-3 %v %v %v", where, fl.args.v[1], fl.args.v[2], fl.args.v[3])
		}
	}
	checkArgs := func(where string, as *Steps, want []Value) {
		t.Helper()
		checkFlow(where, as.fl)
		a := as.Args()
		if a.Len() != len(want) {
			t.Fatalf("%s: step saw %d values, want %d (%v)", where, a.Len(), len(want), want)
		}
		for i := range MaxArgs {
			var w Value
			if i < len(want) {
				w = want[i]
			}
			if a.v[i] != w {
				t.Fatalf("%s: slot %d is %v, want %v", where, i, a.v[i], w)
			}
		}
	}

	const nRoots, runs = 3, 3000
	roots := make([]*Steps, nRoots)
	for i := range roots {
		roots[i] = New(r)
	}
	kinds := []string{"succ", "implicit", "pass", "extIn", "extOther", "extGo", "successStep", "forward", "parallel", "repeat", "errRecover"}
	used := map[string]int{}
	for run := range runs {
		k := rng.IntN(nRoots)
		root := roots[k]
		rt := rootOf(root)
		var cur []Value // the model: what the next step must see
		var pending []func() bool
		nSteps := 1 + rng.IntN(6)
		for s := range nSteps {
			kind := kinds[rng.IntN(len(kinds))]
			n := rng.IntN(MaxArgs + 1)
			where := fmt.Sprintf("run %d step %d (%s %d)", run, s, kind, n)
			used[kind]++
			in := cur
			var out []Value
			switch kind {
			case "succ", "extIn", "extOther", "extGo", "errRecover":
				out = vals(n)
			case "implicit", "parallel", "repeat":
				out = nil
			case "pass":
				out = in
			case "successStep":
				out = vals(n)
				root.SuccessStep(out...)
				cur = out
				continue
			case "forward":
				out = vals(n)
			}
			if kind == "extGo" && n == 0 && rng.IntN(2) == 0 {
				kind, out = "extGoPass", in
			}
			switch kind {
			case "errRecover":
				root.Add(func(as *Steps) {
					checkArgs(where, as, in)
					as.Error("Boom")
				}, func(as *Steps, code string) {
					as.Success(out...)
				})
			case "parallel":
				p := root.Parallel()
				for range 1 + rng.IntN(3) {
					bv := vals(rng.IntN(MaxArgs + 1))
					p.Add(func(as *Steps) { as.Success(bv...) })
				}
			case "repeat":
				root.Add(func(as *Steps) {
					checkArgs(where, as, in)
					as.Repeat(2, func(as *Steps, i int) { as.Success(out...) })
				})
			case "forward":
				root.Add(func(as *Steps) {
					checkArgs(where, as, in)
					as.ForwardArgs()
					as.Add(func(as *Steps) {
						checkArgs(where+" sub", as, in)
						as.Success(out...)
					})
				})
			default:
				root.Add(func(as *Steps) {
					checkArgs(where, as, in)
					switch kind {
					case "succ":
						as.Success(out...)
					case "pass":
						as.Pass()
					case "extIn":
						if !as.External().Success(out...) {
							t.Error(where + ": External.Success in the callback reported false")
						}
					case "extOther":
						x := as.External()
						pending = append(pending, func() bool {
							other := New(r)
							ok := false
							other.Add(func(*Steps) { ok = x.Success(out...) })
							other.Execute()
							r.RunUntilIdle()
							other.Release()
							return ok
						})
					case "extGo", "extGoPass":
						x := as.External()
						pending = append(pending, func() bool {
							done := make(chan bool)
							go func() {
								if kind == "extGoPass" {
									done <- x.Pass()
								} else {
									done <- x.Success(out...)
								}
							}()
							ok := <-done
							r.RunUntilIdle()
							return ok
						})
					}
				})
			}
			cur = out
		}
		end := cur
		var ended []Value
		endRan := false
		endHow := rng.IntN(5)
		root.Add(func(as *Steps) {
			checkArgs(fmt.Sprintf("run %d last", run), as, end)
			endRan = true
			switch endHow {
			case 0: // end empty (the narrow end)
			case 1:
				ended = vals(rng.IntN(MaxArgs + 1))
				as.Success(ended...)
			case 2:
				ended = end
				as.Pass()
			default:
				// Ended by a completion from elsewhere (a fan-out's end:
				// finishRoot's plain end, endRunClear): on the loop from
				// another root's step, or from another goroutine.
				ended = vals(rng.IntN(MaxArgs + 1))
				x := as.External()
				if endHow == 3 {
					pending = append(pending, func() bool {
						other := New(r)
						ok := false
						other.Add(func(*Steps) { ok = x.Success(ended...) })
						other.Execute()
						r.RunUntilIdle()
						other.Release()
						return ok
					})
				} else {
					pending = append(pending, func() bool {
						done := make(chan bool)
						go func() { done <- x.Success(ended...) }()
						return <-done
					})
				}
			}
		})
		var p *Promise
		switch rng.IntN(3) {
		case 0:
			p = root.Promise()
		case 1:
			root.Execute()
		default:
			// From a loop callback: Execute's own copy of the start
			// (the flow's first turn runs before it returns).
			r.Immediate(root.Execute)
		}
		r.RunUntilIdle()
		for len(pending) > 0 {
			f := pending[0]
			pending = pending[1:]
			if !f() {
				t.Fatalf("run %d: a pending External reported false", run)
			}
			r.RunUntilIdle()
		}
		if !endRan || rt.running() {
			t.Fatalf("run %d: the flow did not end (last step ran %v)", run, endRan)
		}
		fl := rt.Steps.fl
		checkFlow(fmt.Sprintf("run %d end", run), fl)
		if fl != nil && rt.argsClear && !fl.args.empty() {
			t.Fatalf("run %d: argsClear set with values in the kept flow", run)
		}
		if p != nil {
			a, err := p.Wait()
			if err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
			for i := range MaxArgs {
				var w Value
				if i < len(ended) {
					w = ended[i]
				}
				if a.v[i] != w {
					t.Fatalf("run %d: the Promise's slot %d is %v, want %v", run, i, a.v[i], w)
				}
			}
		}
		if rng.IntN(2) == 0 {
			root.Release()
			if fl != nil && fl.args != (Args{}) {
				t.Fatalf("run %d: the released root's kept flow holds %v", run, fl.args)
			}
			roots[k] = New(r)
		}
	}
	t.Logf("steps of each kind: %v", used)
}
