package engine

import (
	"runtime"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// inRunList reports whether fl is in e's list of running root flows, the
// list closeAll ends at Close.
func inRunList(e *engine, fl *flow) bool {
	for f := e.runHead; f != nil; f = f.nextRun {
		if f == fl {
			return true
		}
	}
	return false
}

// warmLoopPool fills r's loop-local root pool with roots that keep a flow
// from an earlier run, so that New on the loop hands out roots that
// Execute starts on its fast start (a kept flow, nothing else to set up).
// The asyncsteps_debug build never reuses a released root, so no root
// there is started on the fast start: those tests skip.
func warmLoopPool(t *testing.T, r *reactor.Reactor) {
	if debugReleased {
		t.Skip("the asyncsteps_debug build never reuses a released root: no fast start to test")
	}
	onLoop(r, func() { fillLoopPool(r) })
}

// fillLoopPool is warmLoopPool's work, called on r's loop (a manual or a
// real one): roots executed and released there until the loop-local pool
// holds only roots that keep a flow.
func fillLoopPool(r *reactor.Reactor) {
	for range 8 { // FIFO with a quarantine: each root is run at least twice
		var warm [2 * rootQuarantine]*Steps
		for i := range warm {
			warm[i] = New(r)
			warm[i].Add(func(*Steps) {})
			warm[i].Execute()
		}
		for _, w := range warm {
			w.Release()
		}
	}
}

// newFast is New on the loop for a root that Execute starts on its fast
// start; it fails t if the pool handed out another kind.
func newFast(t *testing.T, r *reactor.Reactor) *Steps {
	root := New(r)
	if rt := rootOf(root); rt.Steps.fl == nil || !rt.keepFlow || rt.more.Load() != nil {
		t.Fatal("the warmed pool handed out a root that Execute does not start on its fast path")
	}
	return root
}

// Execute's fast start on the loop links the flow into the run list only
// when its first turn (runStarted) leaves it running: a flow that ends in
// that turn is never linked, and one that waits, is queued past the
// budget, or goes on after a raise or a panic is in the list when Execute
// returns, so that Close still ends it (cancel handlers run, the root stops
// executing). Each case builds its root in a loop callback; wantLinked is
// whether its flow must be in the list after Execute returns.
func TestRunListLinkAfterFirstTurn(t *testing.T) {
	cases := []struct {
		name       string
		build      func(root *Steps, canceled *bool)
		wantLinked bool
	}{
		{"ends in its first turn", func(root *Steps, _ *bool) {
			root.Add(func(*Steps) {})
		}, false},
		{"ends after two steps", func(root *Steps, _ *bool) {
			root.Add(func(*Steps) {})
			root.Add(func(as *Steps) { as.Success(Int(1)) })
		}, false},
		{"waits in its first step", func(root *Steps, canceled *bool) {
			root.Add(func(as *Steps) {
				as.SetCancel(func(*Steps) { *canceled = true })
				as.WaitExternal()
			})
		}, true},
		{"waits in a later step", func(root *Steps, canceled *bool) {
			root.Add(func(*Steps) {})
			root.Add(func(as *Steps) {
				as.SetCancel(func(*Steps) { *canceled = true })
				as.WaitExternal()
			})
		}, true},
		{"waits in a sub-step", func(root *Steps, canceled *bool) {
			root.Add(func(as *Steps) {
				as.Add(func(as *Steps) {
					as.SetCancel(func(*Steps) { *canceled = true })
					as.WaitExternal()
				})
			})
		}, true},
		{"raises, its handler goes on to a step that waits", func(root *Steps, canceled *bool) {
			root.Add(func(as *Steps) { as.Error("Boom") }, func(as *Steps, _ string) { as.Success() })
			root.Add(func(as *Steps) {
				as.SetCancel(func(*Steps) { *canceled = true })
				as.WaitExternal()
			})
		}, true},
		{"panics, its handler goes on to a step that waits", func(root *Steps, canceled *bool) {
			root.Add(func(*Steps) { panic("pow") }, func(as *Steps, _ string) { as.Success() })
			root.Add(func(as *Steps) {
				as.SetCancel(func(*Steps) { *canceled = true })
				as.WaitExternal()
			})
		}, true},
		{"queued past the turn's budget", func(root *Steps, _ *bool) {
			for range turnBudget + 4 {
				root.Add(func(*Steps) {})
			}
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reactor.NewManual()
			e := engineOf(r)
			warmLoopPool(t, r)
			var root *Steps
			var fl *flow
			canceled, linked := false, false
			onLoop(r, func() {
				root = newFast(t, r)
				c.build(root, &canceled)
				root.Execute()
				fl = root.fl
				linked = fl != nil && inRunList(e, fl)
				if !linked && fl != nil && (fl.prevRun != nil || fl.nextRun != nil) {
					t.Error("a flow out of the run list has a link set")
				}
			})
			if linked != c.wantLinked {
				t.Fatalf("in the run list after Execute: %v, want %v", linked, c.wantLinked)
			}
			if !c.wantLinked {
				if root.Executing() {
					t.Fatal("a flow not linked is still executing")
				}
				return
			}
			if c.name == "queued past the turn's budget" {
				// The loop's pass above ran it to its end: unlinked.
				if root.Executing() || inRunList(e, fl) {
					t.Fatalf("after the loop's pass: executing %v, linked %v", root.Executing(), inRunList(e, fl))
				}
				return
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if !canceled || root.Executing() || e.runHead != nil {
				t.Fatalf("after Close: cancel handler ran %v, executing %v, run list empty %v",
					canceled, root.Executing(), e.runHead == nil)
			}
			if st := root.State(); st == nil || st.ErrorInfo != "reactor closed" {
				t.Fatalf("after Close: state %+v, want ErrorInfo \"reactor closed\"", st)
			}
		})
	}
}

// A step of a flow that Execute ran on the loop ends its goroutine
// (runtime.Goexit): the flow cannot go on, but it is in the run list, so
// Close still ends it and runs its cancel handler.
func TestRunListLinkAfterGoexitInFirstTurn(t *testing.T) {
	r := reactor.NewManual()
	e := engineOf(r)
	warmLoopPool(t, r)
	var root *Steps
	canceled := false
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		r.Immediate(func() {
			root = newFast(t, r)
			root.Add(func(as *Steps) {
				as.SetCancel(func(*Steps) { canceled = true })
				runtime.Goexit()
			})
			root.Execute()
		})
		r.RunUntilIdle()
	}()
	<-exited
	if !inRunList(e, root.fl) {
		t.Fatal("the flow whose step exited the goroutine is not in the run list")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !canceled || root.Executing() || e.runHead != nil {
		t.Fatalf("after Close: cancel handler ran %v, executing %v, run list empty %v",
			canceled, root.Executing(), e.runHead == nil)
	}
}

// A flow whose first step executes another root (queued, so linked at its
// start) and then waits: both are in the run list, and Close ends both.
func TestRunListLinkWithRootStartedInFirstTurn(t *testing.T) {
	r := reactor.NewManual()
	e := engineOf(r)
	warmLoopPool(t, r)
	var first, second *Steps
	canceled := 0
	onLoop(r, func() {
		second = newFast(t, r)
		second.Add(func(as *Steps) {
			as.SetCancel(func(*Steps) { canceled++ })
			as.WaitExternal()
		})
		first = newFast(t, r)
		first.Add(func(as *Steps) {
			second.Execute()
			as.SetCancel(func(*Steps) { canceled++ })
			as.WaitExternal()
		})
		first.Execute()
	})
	n := 0
	for f := e.runHead; f != nil; f = f.nextRun {
		n++
	}
	if n != 2 || !inRunList(e, first.fl) || !inRunList(e, second.fl) {
		t.Fatalf("run list holds %d flows (first %v, second %v), want both", n, inRunList(e, first.fl), inRunList(e, second.fl))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if canceled != 2 || first.Executing() || second.Executing() {
		t.Fatalf("after Close: %d cancel handlers ran, executing %v %v", canceled, first.Executing(), second.Executing())
	}
}
