package engine

import (
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// Probes of the start Execute runs on the loop (runStarted): the
// label, the step count, panics, a panicking OnEnd, and the order of a
// root executed by the first turn's step against a later Execute.

func onLoop(r *reactor.Reactor, fn func()) {
	r.Immediate(fn)
	r.RunUntilIdle()
}

func TestExecuteOnLoopLabelAndMetrics(t *testing.T) {
	withFlowLabels(t, LabelsAlways)
	r := reactor.NewManual()
	var inStep, after string
	var ranInside bool
	before := engineOf(r).snapshot().StepsRun
	onLoop(r, func() {
		root := New(r)
		root.SetName("onloop")
		root.Add(func(as *Steps) { inStep = labelProbe(t) })
		root.Add(func(as *Steps) {})
		root.Execute()
		ranInside = !root.Executing()
		after = labelProbe(t)
		root.Release()
	})
	if !ranInside {
		t.Fatal("the named root did not run inside Execute")
	}
	if inStep != `{"flow":"onloop"}` {
		t.Errorf("label in the step run by Execute: %q", inStep)
	}
	if after != "" {
		t.Errorf("after Execute the loop's goroutine carries %q", after)
	}
	if got := engineOf(r).snapshot().StepsRun - before; got != 2 {
		t.Errorf("StepsRun grew by %d, want 2", got)
	}
}

func TestExecuteOnLoopPanics(t *testing.T) {
	for _, tc := range []struct {
		name string
		step func(*Steps)
	}{
		{"panic", func(*Steps) { panic("boom") }},
		{"panic(nil)", func(*Steps) { panic(nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := reactor.NewManual()
			var ends []string
			var code string
			onLoop(r, func() {
				root := New(r)
				root.Add(tc.step)
				X.OnEnd(root, func(_ *Steps, c string) { ends = append(ends, c) })
				root.Execute()
				if root.Executing() {
					t.Error("still executing after a panic in its only step")
				}
				code = strings.Join(ends, ",")
				root.Release()
			})
			if code != InternalError || len(ends) != 1 {
				t.Fatalf("ends %q, want one %s inside Execute", ends, InternalError)
			}
		})
	}
}

// A flow that ends inside Execute with an OnEnd that panics ends once, as
// InternalError, Execute returns normally, and the root runs again.
func TestExecuteOnLoopOnEndPanics(t *testing.T) {
	r := reactor.NewManual()
	root := New(r)
	runs, ends := 0, 0
	X.OnEnd(root, func(_ *Steps, c string) {
		ends++
		panic("onend")
	})
	for i := 0; i < 2; i++ {
		onLoop(r, func() {
			root.Add(func(*Steps) { runs++ })
			root.Execute()
			if root.Executing() {
				t.Error("still executing after its end")
			}
			if root.State().LastException == nil {
				t.Error("no LastException after a panicking OnEnd")
			}
		})
	}
	if runs != 2 || ends != 2 {
		t.Fatalf("runs %d ends %d, want 2 and 2", runs, ends)
	}
	root.Release()
}

// A root executed by the step of a flow that Execute runs is queued (the
// step is inside the engine's walk); a root executed after that Execute
// returns is queued behind it: they start in Execute order.
func TestExecuteOnLoopOrderFromFirstTurn(t *testing.T) {
	r := reactor.NewManual()
	var log []string
	onLoop(r, func() {
		second := New(r)
		second.Add(func(*Steps) { log = append(log, "second") })
		first := New(r)
		first.Add(func(as *Steps) {
			log = append(log, "first")
			second.Execute()
			as.WaitExternal()
		})
		first.Execute()
		third := New(r)
		third.Add(func(*Steps) { log = append(log, "third") })
		third.Execute()
		log = append(log, "returned")
		second.ReleaseAtEnd()
		third.ReleaseAtEnd()
		first.Release() // cancels it
	})
	if got := strings.Join(log, ","); got != "first,returned,second,third" {
		t.Fatalf("log %s", got)
	}
}

// On a real reactor: a flow that Execute ran on the loop and that waits is
// ended by Close ("reactor closed"), whether Close came after the Execute
// or before it in the same callback.
func TestExecuteOnLoopThenClose(t *testing.T) {
	for _, closeFirst := range []bool{false, true} {
		r, err := reactor.New(reactor.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ran := make(chan struct{})
		go r.Run()
		var p *Promise
		started := make(chan bool, 1)
		r.Immediate(func() {
			if closeFirst {
				r.Close()
			}
			root := New(r)
			root.Add(func(as *Steps) { close(ran); as.WaitExternal() })
			p = root.Promise()
			select {
			case <-ran:
				started <- true
			default:
				started <- false
			}
			if !closeFirst {
				r.Close()
			}
		})
		if !<-started {
			t.Errorf("closeFirst=%v: the flow did not start inside Promise", closeFirst)
		}
		r.Close()
		_, err = p.Wait()
		if err == nil || !strings.Contains(err.Error(), "reactor closed") {
			t.Errorf("closeFirst=%v: Wait: %v, want reactor closed", closeFirst, err)
		}
	}
}

// Two manual reactors driven by one goroutine: a step of A, run by A's
// drive nested in a callback of B's, executes a root of B. B's loop is
// the caller (IsSameThread) and B's engine is outside any walk of its
// own, so B's flow runs inside A's step, as engine.RunReady(B) there
// would run B's ready flows: "outside any step" is the reactor's own
// steps (CONTRACT.md, "Where a flow runs").
func TestExecuteOnLoopOtherReactorsStep(t *testing.T) {
	a, b := reactor.NewManual(), reactor.NewManual()
	var log []string
	onLoop(b, func() {
		broot := New(b)
		broot.Add(func(*Steps) { log = append(log, "b step") })
		aroot := New(a)
		aroot.Add(func(*Steps) {
			broot.Execute()
			log = append(log, "a step end")
		})
		aroot.Execute() // off a's loop: queued
		a.RunUntilIdle()
		aroot.Release()
		broot.ReleaseAtEnd()
	})
	if got := strings.Join(log, ","); got != "b step,a step end" {
		t.Fatalf("log %s, want B's step inside A's", got)
	}
}
