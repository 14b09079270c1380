package engine

import (
	"runtime"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A callback of a named flow that ends its goroutine (runtime.Goexit:
// t.FailNow in a step does) ends that goroutine's turn with the flow's
// label decided (e.label): the goroutine that drives the loop next carries
// no label, so the engine must not take it for one carrying that name. The
// next flow of the same name, on another goroutine, runs with its label
// from its first step, and the turn's end leaves that goroutine
// unlabeled. One case per recover a Goexit leaves through: RunReady's
// batch (runBatch), the first turn of an Execute on the loop
// (runStarted), a flow driven on after a raise (drive1), and an OnEnd run
// at a step's end inside the batch. A Goexit in the error handler also
// left RunReady "running" (settle runs it outside drive1's recover), so
// that an Execute on the loop queued its flow instead of running it.
func TestGoexitInNamedFlowLeavesNoStaleLabel(t *testing.T) {
	withFlowLabels(t, LabelsAlways)
	name := NewName("GOEXIT-LABEL")
	for _, tc := range []struct {
		case_ string
		// exit builds a flow named name on r whose callback calls
		// runtime.Goexit, and starts it; go, on a goroutine of its own,
		// drives r until that goroutine ends.
		exit func(r *reactor.Reactor) (start func())
	}{
		{"batch step", func(r *reactor.Reactor) func() {
			rt := New(r)
			rt.SetFlowName(name)
			rt.Add(func(*Steps) { runtime.Goexit() })
			rt.Execute()
			return func() { r.RunUntilIdle() }
		}},
		{"first turn of an Execute on the loop", func(r *reactor.Reactor) func() {
			rt := New(r)
			rt.SetFlowName(name)
			rt.Add(func(*Steps) { runtime.Goexit() })
			return func() {
				r.Immediate(func() { rt.Execute() })
				r.RunUntilIdle()
			}
		}},
		{"error handler after a raise", func(r *reactor.Reactor) func() {
			rt := New(r)
			rt.SetFlowName(name)
			rt.Add(func(as *Steps) { as.Error("Boom", "") }, func(*Steps, string) { runtime.Goexit() })
			rt.Execute()
			return func() { r.RunUntilIdle() }
		}},
		{"OnEnd at a step's end", func(r *reactor.Reactor) func() {
			rt := New(r)
			rt.SetFlowName(name)
			X.OnEnd(rt, func(*Steps, string) { runtime.Goexit() })
			rt.Add(func(*Steps) {})
			rt.Execute()
			return func() { r.RunUntilIdle() }
		}},
	} {
		t.Run(tc.case_, func(t *testing.T) {
			r := reactor.NewManual()
			drive := tc.exit(r)
			exited := make(chan struct{})
			go func() {
				defer close(exited)
				drive()
			}()
			<-exited
			var got []string
			probe := func(*Steps) { got = append(got, labelProbe(t)) }
			want := `{"flow":"GOEXIT-LABEL"}`
			// A first turn on the loop (runStarted), run inside its
			// Execute (the exit left RunReady not running).
			again := New(r)
			again.SetFlowName(name)
			again.Add(probe)
			atOnce := false
			r.Immediate(func() {
				again.Execute()
				atOnce = len(got) == 1
			})
			r.RunUntilIdle()
			if !atOnce || len(got) != 1 || got[0] != want {
				t.Errorf("an Execute on the loop after it: run inside it %v, labels %q, want %s", atOnce, got, want)
			}
			// And RunReady's batch, driven by this goroutine.
			got = nil
			next := New(r)
			next.SetFlowName(name)
			next.Add(probe).Add(probe)
			next.Execute()
			r.RunUntilIdle()
			if len(got) != 2 || got[0] != want || got[1] != want {
				t.Errorf("the next flow of the name, on another goroutine: labels %q, want %s in both steps", got, want)
			}
			if l := labelProbe(t); l != "" {
				t.Errorf("after the turn the driving goroutine still carries %s", l)
			}
		})
	}
}
