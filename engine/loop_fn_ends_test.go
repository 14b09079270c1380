package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A Loop's iteration frame carries the loop's body in fn: whatever ends a
// Loop's iteration (Continue or Break by label from a nested step, an error
// caught below the loop, a timeout, an error handler that recovers inside
// the iteration), the frames it gives back must not carry the body into the
// next frame taken from the pool: a Repeat, a ForEach or a plain step run
// after it on that memory runs its own callback, with its own index, and
// the Loop's body runs only as often as the Loop iterated.
func TestLoopFnAcrossEnds(t *testing.T) {
	type run struct {
		loops   int   // calls of the Loop's body
		reps    []int // Repeat's indices, in order
		each    []int // ForEach's indices
		plain   int   // the plain step after them
		bodyFns []bool
	}
	cases := []struct {
		name string
		// body is the Loop's body; n counts its calls (from 1).
		body func(as *Steps, n int, x *External)
		// poke, when set, is applied once the flow parks (reactor idle).
		poke      func(r *reactor.Reactor, x External)
		wantLoops int
	}{
		{"Continue then Break by label from a nested Repeat", func(as *Steps, n int, x *External) {
			as.Add(func(as *Steps) {
				as.Repeat(2, func(as *Steps, i int) {
					if i == 1 && n < 3 {
						as.Continue("L")
					}
					if i == 1 && n == 3 {
						as.Break("L")
					}
				}, "inner")
			})
		}, nil, 3},
		{"error caught inside the iteration, the loop goes on", func(as *Steps, n int, x *External) {
			as.Add(func(as *Steps) {
				as.Add(func(as *Steps) { as.Error("Boom") })
			}, func(as *Steps, code string) {
				if n == 4 {
					as.Break("L")
				}
				as.Success()
			})
		}, nil, 4},
		{"error through the loop, caught below it", func(as *Steps, n int, x *External) {
			as.Add(func(as *Steps) {
				if n == 2 {
					as.Error("Boom")
				}
			})
		}, nil, 2},
		{"parked then Continue from the completed step", func(as *Steps, n int, x *External) {
			as.Add(func(as *Steps) { *x = as.External() })
			as.Add(func(as *Steps) {
				if n < 3 {
					as.Continue("L")
				}
				as.Break()
			})
		}, func(r *reactor.Reactor, x External) { x.Success() }, 3},
		{"timeout mid-iteration, caught below the loop", func(as *Steps, n int, x *External) {
			as.Add(func(as *Steps) {
				if n == 2 {
					as.SetTimeout(time.Second)
					*x = as.External()
				}
			})
		}, func(r *reactor.Reactor, x External) { r.Advance(2 * time.Second) }, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reactor.NewManual()
			e := engineOf(r)
			root := New(r)
			var got run
			var x External
			root.Add(func(as *Steps) {
				as.Loop(func(as *Steps) {
					got.loops++
					got.bodyFns = append(got.bodyFns, as.fn != nil)
					c.body(as, got.loops, &x)
				}, "L")
			}, func(as *Steps, code string) { as.Success() })
			root.Repeat(3, func(as *Steps, i int) {
				if as.fn != nil {
					t.Errorf("Repeat iteration %d carries an fn", i)
				}
				got.reps = append(got.reps, i)
			})
			root.Add(func(as *Steps) {
				ForEach(as, []int{5, 6}, func(as *Steps, i int, v int) {
					if as.fn != nil {
						t.Errorf("ForEach iteration %d carries an fn", i)
					}
					got.each = append(got.each, i)
				})
			})
			root.Add(func(as *Steps) { got.plain++ })
			outcome := "running"
			xOnEnd(root, func(_ *Steps, code string) { outcome = code })
			root.Execute()
			r.RunUntilIdle()
			for i := 0; i < 8 && outcome == "running" && c.poke != nil; i++ {
				c.poke(r, x)
				r.RunUntilIdle()
			}
			if outcome != "" {
				t.Fatalf("outcome %q, want success", outcome)
			}
			if got.loops != c.wantLoops || !slices.Equal(got.reps, []int{0, 1, 2}) ||
				!slices.Equal(got.each, []int{0, 1}) || got.plain != 1 {
				t.Fatalf("loop body %d times (want %d), Repeat %v, ForEach %v, plain %d",
					got.loops, c.wantLoops, got.reps, got.each, got.plain)
			}
			for i, b := range got.bodyFns {
				if !b {
					t.Errorf("Loop iteration %d had no fn", i)
				}
			}
			for f := e.free; f != nil; f = f.next {
				if f.fn != nil {
					t.Fatalf("a free frame (kind %d) keeps its fn", f.kind)
				}
			}
			for f := rootOf(root).spare; f != nil; f = f.next {
				if f.fn != nil {
					t.Fatalf("a spare frame (kind %d) keeps its fn", f.kind)
				}
			}
			root.Release()
		})
	}
}

// A root canceled while its Loop's iteration is parked, then given a
// Repeat and executed again: the Repeat's iterations (on frames the
// canceled run gave back to the root) run the Repeat's body.
func TestLoopCanceledThenRepeat(t *testing.T) {
	r := reactor.NewManual()
	root := New(r)
	loops := 0
	root.Loop(func(as *Steps) {
		loops++
		as.Add(func(as *Steps) { as.External() })
	})
	outcome := "running"
	xOnEnd(root, func(_ *Steps, code string) { outcome = code })
	root.Execute()
	r.RunUntilIdle()
	root.Cancel()
	r.RunUntilIdle()
	if outcome != Canceled || loops != 1 {
		t.Fatalf("after Cancel: outcome %q, loop body %d times; want %q, 1", outcome, loops, Canceled)
	}
	var reps []int
	root.Repeat(4, func(as *Steps, i int) { reps = append(reps, i) })
	outcome = "running"
	root.Execute()
	r.RunUntilIdle()
	if outcome != "" || loops != 1 || !slices.Equal(reps, []int{0, 1, 2, 3}) {
		t.Fatalf("second run: outcome %q, loop body %d times, Repeat %v; want success, 1, 0..3", outcome, loops, reps)
	}
	root.Release()
}

// External.Success on the loop, in every state the inlined on-loop path
// must tell apart (f17d5ba): from the step's own callback (a Success
// there), twice (the second does nothing), after the flow was canceled
// (nothing), from another flow's callback while the step waits, and from a
// goroutine off the loop. The next step sees the values of the first
// Success only.
func TestExternalSuccessStates(t *testing.T) {
	cases := []struct {
		name string
		// park is the first step's body; it may complete x itself.
		own bool
		// complete completes x once the flow parked; ok is what the
		// first Success must report.
		complete  func(t *testing.T, r *reactor.Reactor, x External)
		want      string // outcome
		wantValue int64  // the second step's argument, -1 when it must not run
	}{
		{"inside its own callback", true, nil, "", 7},
		{"twice on the loop", false, func(t *testing.T, r *reactor.Reactor, x External) {
			if !x.Success(Int(7)) {
				t.Error("first Success reported false")
			}
			if x.Success(Int(8)) {
				t.Error("second Success reported true")
			}
		}, "", 7},
		{"from another flow's step", false, func(t *testing.T, r *reactor.Reactor, x External) {
			other := New(r)
			done := false
			other.Add(func(as *Steps) {
				done = x.Success(Int(7))
				if x.Success(Int(9)) {
					t.Error("second Success inside another flow reported true")
				}
			})
			other.Execute()
			r.RunUntilIdle()
			if !done {
				t.Error("Success from another flow's step reported false")
			}
			other.Release()
		}, "", 7},
		{"off the loop", false, func(t *testing.T, r *reactor.Reactor, x External) {
			ok := make(chan bool)
			go func() { ok <- x.Success(Int(7)) }()
			if !<-ok {
				t.Error("Success off the loop reported false")
			}
		}, "", 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reactor.NewManual()
			root := New(r)
			var x External
			got := int64(-1)
			root.Add(func(as *Steps) {
				x = as.External()
				if c.own {
					if !x.Success(Int(7)) {
						t.Error("Success inside the step's own callback reported false")
					}
					if x.Success(Int(8)) {
						t.Error("second Success inside the callback reported true")
					}
				}
			})
			root.Add(func(as *Steps) { got = as.Arg(0).Int() })
			outcome := "running"
			xOnEnd(root, func(_ *Steps, code string) { outcome = code })
			root.Execute()
			r.RunUntilIdle()
			if c.complete != nil {
				c.complete(t, r, x)
			}
			r.RunUntilIdle()
			if outcome != c.want || got != c.wantValue {
				t.Fatalf("outcome %q, value %d; want %q, %d", outcome, got, c.want, c.wantValue)
			}
			if x.Success(Int(9)) {
				t.Error("Success after the flow ended reported true")
			}
			root.Release()
		})
	}
	t.Run("after cancel", func(t *testing.T) {
		r := reactor.NewManual()
		root := New(r)
		var x External
		ran := false
		root.Add(func(as *Steps) { x = as.External() })
		root.Add(func(as *Steps) { ran = true })
		outcome := "running"
		xOnEnd(root, func(_ *Steps, code string) { outcome = code })
		root.Execute()
		r.RunUntilIdle()
		root.Cancel()
		if x.Success(Int(1)) {
			// Cancel from the loop's goroutine claims the step at once
			// or posts: either way the Success must not complete it.
			r.RunUntilIdle()
		}
		r.RunUntilIdle()
		if outcome != Canceled || ran {
			t.Fatalf("outcome %q, next step ran %v; want %q, false", outcome, ran, Canceled)
		}
		if x.Success(Int(1)) {
			t.Error("Success after the cancel was applied reported true")
		}
		root.Release()
	})
}
