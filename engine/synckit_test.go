package engine_test

// Tests of the kit for writing Sync objects (bind.go, hold.go,
// passthrough.go, cancel.go's SetFinally), one name at a time, through the
// public API only. Example_writingASyncObject shows them together.

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

type box struct{ n int }

func addOne(as *engine.Steps, b *box) { b.n++; as.Success(engine.Int(int64(b.n))) }

func TestAddWith(t *testing.T) {
	t.Run("calls f with the bound value, without a closure", func(t *testing.T) {
		r := reactor.NewManual()
		b := &box{n: 41}
		root := engine.New(r)
		if got := engine.AddWith(root, addOne, b); got != root {
			t.Fatalf("AddWith returned %p, want its receiver %p", got, root)
		}
		args, err := runFlow(t, r, root)
		wantNoErr(t, err)
		if args.At(0).Int() != 42 || b.n != 42 {
			t.Fatalf("step saw n=%d, succeeded with %d; want 42", b.n, args.At(0).Int())
		}
	})
	t.Run("error handler", func(t *testing.T) {
		r := reactor.NewManual()
		var got string
		root := engine.New(r)
		engine.AddWith(root, func(as *engine.Steps, b *box) { as.Error("Boom") }, &box{},
			func(as *engine.Steps, code string) { got = code; as.Success() })
		_, err := runFlow(t, r, root)
		wantNoErr(t, err)
		if got != "Boom" {
			t.Fatalf("handler got %q, want Boom", got)
		}
	})
	for _, tc := range []struct {
		name string
		add  func(as *engine.Steps)
	}{
		{"nil func is a misuse", func(as *engine.Steps) { engine.AddWith[box](as, nil, &box{}) }},
		{"two ErrorFuncs are a misuse", func(as *engine.Steps) {
			eh := func(*engine.Steps, string) {}
			engine.AddWith(as, addOne, &box{}, eh, eh)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runMisuse(t, tc.add)
			if res.code != engine.InternalError {
				t.Fatalf("code %q, want InternalError", res.code)
			}
		})
	}
	if engine.AddWith(nil, addOne, &box{}) != nil {
		t.Error("AddWith on a nil accessor: want nil")
	}
}

func TestBound(t *testing.T) {
	r := reactor.NewManual()
	b := &box{}
	var inBound, inPlain *box
	root := engine.New(r)
	engine.AddWith(root, func(as *engine.Steps, _ *box) { inBound = engine.Bound[box](as) }, b)
	root.Add(func(as *engine.Steps) { inPlain = engine.Bound[box](as) })
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	if inBound != b {
		t.Errorf("Bound in an AddWith step = %p, want the bound %p", inBound, b)
	}
	if inPlain != nil {
		t.Errorf("Bound in an Add step = %p, want nil", inPlain)
	}
	if engine.Bound[box](nil) != nil {
		t.Error("Bound(nil): want nil")
	}
}

// Two Stack calls in one step give distinct zeroed memory (what a Sync
// object keeps its per-call state in).
func TestStackTwiceInOneStep(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	var first, second *box
	root.Add(func(as *engine.Steps) {
		first = engine.Stack[box](as)
		first.n = 7
		second = engine.Stack[box](as)
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	if first == nil || second == nil || first == second || second.n != 0 {
		t.Fatalf("two Stacks of one step: %p and %p (second %+v), want distinct zeroed memory", first, second, second)
	}
}

func TestRebind(t *testing.T) {
	r := reactor.NewManual()
	shared, own := &box{n: 1}, &box{n: 2}
	var after *box
	root := engine.New(r)
	engine.AddWith(root, func(as *engine.Steps, b *box) {
		engine.Rebind(as, own)
		after = engine.Bound[box](as)
	}, shared)
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	if after != own {
		t.Fatalf("Bound after Rebind = %p, want the new value %p", after, own)
	}
	if shared.n != 1 {
		t.Fatal("Rebind changed the value given to AddWith")
	}
}

func TestHold(t *testing.T) {
	type key struct{ name string }
	a, b := &key{"a"}, &key{"b"}
	r := reactor.NewManual()
	var steps []bool
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		steps = append(steps, as.Holds(a)) // false: nothing held yet
		as.Hold(a)
		as.Hold(a)
		as.Hold(b)
		steps = append(steps, as.Holds(a), as.Holds(b))
		as.Unhold(a) // the most recent Hold of a: a is still held once
		steps = append(steps, as.Holds(a))
		as.Unhold(a)
		steps = append(steps, as.Holds(a), as.Holds(b))
		p := as.Parallel()
		p.Add(func(as *engine.Steps) { steps = append(steps, as.Holds(b)) }) // a branch inherits nothing
	})
	root.Add(func(as *engine.Steps) { steps = append(steps, as.Holds(b)) }) // the flow's later steps still hold b
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	want := []bool{false, true, true, true, false, true, false, true}
	if len(steps) != len(want) {
		t.Fatalf("got %v, want %v", steps, want)
	}
	for i := range want {
		if steps[i] != want[i] {
			t.Fatalf("got %v, want %v", steps, want)
		}
	}
}

func TestForwardArgs(t *testing.T) {
	for _, forward := range []bool{false, true} {
		r := reactor.NewManual()
		var got int
		root := engine.New(r)
		root.Add(func(as *engine.Steps) { as.Success(engine.Int(5), engine.Str("x")) })
		root.Add(func(as *engine.Steps) {
			if forward {
				as.ForwardArgs()
			}
			as.Add(func(as *engine.Steps) { got = as.Args().Len() })
		})
		_, err := runFlow(t, r, root)
		wantNoErr(t, err)
		if want := map[bool]int{false: 0, true: 2}[forward]; got != want {
			t.Errorf("ForwardArgs %v: the first sub-step got %d values, want %d", forward, got, want)
		}
	}
}

func TestPass(t *testing.T) {
	t.Run("passes the received values on", func(t *testing.T) {
		r := reactor.NewManual()
		root := engine.New(r)
		root.Add(func(as *engine.Steps) { as.Success(engine.Int(1), engine.Str("two")) })
		root.Add(func(as *engine.Steps) { as.Pass() })
		args, err := runFlow(t, r, root)
		wantNoErr(t, err)
		if args.Len() != 2 || args.At(0).Int() != 1 || args.At(1).Str() != "two" {
			t.Fatalf("after Pass: %d values (%v, %v), want 1 and two", args.Len(), args.At(0), args.At(1))
		}
	})
	for _, tc := range []struct {
		name string
		body engine.ExecFunc
	}{
		{"after Success", func(as *engine.Steps) { as.Success(); as.Pass() }},
		{"after sub-steps", func(as *engine.Steps) { as.Add(func(*engine.Steps) {}); as.Pass() }},
	} {
		t.Run("misuse "+tc.name, func(t *testing.T) {
			if res := runMisuse(t, tc.body); res.code != engine.InternalError {
				t.Fatalf("code %q, want InternalError", res.code)
			}
		})
	}
}

func TestSetFinallyRunsOnEveryEnd(t *testing.T) {
	for _, end := range []string{"success", "error", "cancel"} {
		t.Run(end, func(t *testing.T) {
			r := reactor.NewManual()
			var log logger
			root := engine.New(r)
			root.Add(func(as *engine.Steps) {
				as.SetFinally(func(*engine.Steps) { log.add("finally") })
				as.Add(func(as *engine.Steps) {
					log.add("sub")
					switch end {
					case "error":
						as.Error("Boom")
					case "cancel":
						as.WaitExternal()
					}
				})
			}, func(as *engine.Steps, code string) { log.add("handler %s", code) })
			p := root.Promise()
			r.RunUntilIdle()
			if end == "cancel" {
				root.Cancel()
				r.RunUntilIdle()
			}
			_, err := waitDone(t, p)
			switch end {
			case "success":
				wantNoErr(t, err) // implicit success is kept
				log.check(t, "sub", "finally")
			case "error":
				wantCode(t, err, "Boom")
				log.check(t, "sub", "handler Boom", "finally")
			case "cancel":
				wantCode(t, err, engine.Canceled)
				log.check(t, "sub", "finally")
			}
		})
	}
}
