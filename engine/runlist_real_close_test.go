package engine

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// onRealLoop runs fn on r's loop (r runs) and waits for it.
func onRealLoop(t *testing.T, r *reactor.Reactor, fn func()) {
	t.Helper()
	done := make(chan struct{})
	r.Immediate(func() { fn(); close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("loop callback did not run")
	}
}

// Close called on a real loop from inside the first turn of a flow that
// Execute's fast start runs (the flow is not in the run list while that
// turn runs): the loop stops after the callback, and its shutdown must
// still end the flow (cancel handler run, "reactor closed").
func TestRunListRealCloseInFirstTurn(t *testing.T) {
	cases := []struct {
		name  string
		build func(r *reactor.Reactor, root *Steps, canceled *int)
	}{
		{"Close then wait in the first step", func(r *reactor.Reactor, root *Steps, canceled *int) {
			root.Add(func(as *Steps) {
				_ = r.Close()
				as.SetCancel(func(*Steps) { *canceled++ })
				as.WaitExternal()
			})
		}},
		{"Close then a sub-step that waits", func(r *reactor.Reactor, root *Steps, canceled *int) {
			root.Add(func(as *Steps) {
				_ = r.Close()
				as.Add(func(as *Steps) {
					as.SetCancel(func(*Steps) { *canceled++ })
					as.WaitExternal()
				})
			})
		}},
		{"Close in an error handler that goes on to wait", func(r *reactor.Reactor, root *Steps, canceled *int) {
			root.Add(func(as *Steps) { as.Error("Boom") }, func(as *Steps, _ string) {
				_ = r.Close()
				as.Success()
			})
			root.Add(func(as *Steps) {
				as.SetCancel(func(*Steps) { *canceled++ })
				as.WaitExternal()
			})
		}},
		{"Close then panic, handler goes on to wait", func(r *reactor.Reactor, root *Steps, canceled *int) {
			root.Add(func(as *Steps) { _ = r.Close(); panic("pow") }, func(as *Steps, _ string) { as.Success() })
			root.Add(func(as *Steps) {
				as.SetCancel(func(*Steps) { *canceled++ })
				as.WaitExternal()
			})
		}},
		{"Close and queued past the budget", func(r *reactor.Reactor, root *Steps, canceled *int) {
			root.Add(func(as *Steps) {
				_ = r.Close()
				as.SetCancel(func(*Steps) { *canceled++ }) // this frame stays: its sub-steps run past the budget
				for range turnBudget + 4 {
					as.Add(func(*Steps) {})
				}
				as.Add(func(as *Steps) { as.WaitExternal() })
			})
		}},
		{"Close, another root executed, wait", func(r *reactor.Reactor, root *Steps, canceled *int) {
			root.Add(func(as *Steps) {
				other := New(r)
				other.Add(func(as *Steps) {
					as.SetCancel(func(*Steps) { *canceled++ })
					as.WaitExternal()
				})
				other.Execute()
				_ = r.Close()
				as.SetCancel(func(*Steps) { *canceled++ })
				as.WaitExternal()
			})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := reactor.New(reactor.Options{CPU: -1})
			if err != nil {
				t.Fatal(err)
			}
			runErr := make(chan error, 1)
			go func() { runErr <- r.Run() }()
			onRealLoop(t, r, func() { fillLoopPool(r) })
			var root *Steps
			canceled := 0
			fast := false
			r.Immediate(func() {
				root = New(r)
				rt := rootOf(root)
				fast = rt.Steps.fl != nil && rt.keepFlow && rt.more.Load() == nil
				c.build(r, root, &canceled)
				root.Execute()
			})
			select {
			case err := <-runErr:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return after Close on the loop")
			}
			// The asyncsteps_debug build never reuses a released root, so
			// its roots take the slow start: Close must end them all the same.
			if !fast && !debugReleased {
				t.Fatal("the root is not one Execute starts on its fast path")
			}
			// (The other root executed in the last case is queued when
			// the loop stops, its step never run: Close ends it with no
			// cancel handler of its own.)
			want := 1
			if canceled != want || root.Executing() {
				t.Fatalf("after Close: %d cancel handlers ran (want %d), executing %v", canceled, want, root.Executing())
			}
			if st := root.State(); st == nil || st.ErrorInfo != "reactor closed" {
				t.Fatalf("after Close: state %+v", st)
			}
			if e := engineOf(r); e.runHead != nil {
				t.Fatal("run list not empty after shutdown")
			}
		})
	}
}

// A flow started by Execute's fast start nested inside another flow's
// first turn: A's OnEnd (A ends in its first turn) drives the manual
// reactor (a nested RunUntilIdle) after executing B, whose step posts an
// Immediate that executes C: the nested RunReady (runReadyNested) leaves
// running clear, so C takes the fast start inside A's turn, and waits. C must be in the run
// list when A's turn is over, and Close must end it.
func TestRunListLinkNestedFastStartInOnEnd(t *testing.T) {
	r := reactor.NewManual()
	e := engineOf(r)
	warmLoopPool(t, r)
	var a, c *Steps
	canceled, cFast, ranNested := false, false, false
	onLoop(r, func() {
		c = newFast(t, r)
		c.Add(func(as *Steps) {
			as.SetCancel(func(*Steps) { canceled = true })
			as.WaitExternal()
		})
		a = New(r)
		a.Add(func(*Steps) {})
		X.OnEnd(a, func(*Steps, string) {
			// B runs in the nested drive's RunReady (runReadyNested),
			// which ends with running clear; its Immediate runs after.
			b := New(r)
			b.Add(func(*Steps) {
				r.Immediate(func() {
					ranNested = true
					cFast = e.readyHead == nil && !e.running && e.cur == nil
					c.Execute()
				})
			})
			b.Execute()
			r.RunUntilIdle()
		})
		a.Execute()
	})
	if !ranNested {
		t.Fatal("the nested drive did not run the Immediate")
	}
	if !cFast {
		t.Fatal("C did not take the fast start (engine running or busy): the case is not exercised")
	}
	if !c.Executing() || !inRunList(e, c.fl) {
		t.Fatalf("C executing %v, in the run list %v; want both", c.Executing(), c.fl != nil && inRunList(e, c.fl))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !canceled || c.Executing() || e.runHead != nil {
		t.Fatalf("after Close: cancel handler ran %v, executing %v, run list empty %v", canceled, c.Executing(), e.runHead == nil)
	}
}
