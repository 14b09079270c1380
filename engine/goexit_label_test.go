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
// that an Execute on the loop queued its flow instead of running it; so
// did one in the cancel handler or the OnEnd of a flow canceled while it
// waited in the batch (batchStopped ends it outside runBatch's recover).
// Neither flow after the exit may fail: nothing the exit left (a raise)
// is settled in their callbacks.
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
		// A flow canceled while it waited in the batch is ended by
		// batchStopped, outside every recover of the batch: its cancel
		// handlers and its OnEnd run there with RunReady running and the
		// label of the flow before it decided.
		{"OnEnd of a flow canceled in the batch", func(r *reactor.Reactor) func() {
			return canceledInBatch(r, name, func(b *Steps) {
				X.OnEnd(b, func(*Steps, string) { runtime.Goexit() })
			}, nil)
		}},
		{"cancel handler of a flow canceled in the batch", func(r *reactor.Reactor) func() {
			return canceledInBatch(r, name, nil, func(*Steps) { runtime.Goexit() })
		}},
		// A deferred call of the step that panics or raises while the
		// Goexit unwinds: the recover sees its value, not nil, and the
		// goroutine still ends (a recover cannot stop a Goexit).
		{"panic after a Goexit in a batch step", func(r *reactor.Reactor) func() {
			rt := New(r)
			rt.SetFlowName(name)
			rt.Add(func(*Steps) {
				defer func() { panic("after the Goexit") }()
				runtime.Goexit()
			})
			rt.Execute()
			return func() { r.RunUntilIdle() }
		}},
		{"raise after a Goexit in the first turn of an Execute on the loop", func(r *reactor.Reactor) func() {
			rt := New(r)
			rt.SetFlowName(name)
			rt.Add(func(as *Steps) {
				defer as.Error("Boom", "after the Goexit")
				runtime.Goexit()
			})
			return func() {
				r.Immediate(func() { rt.Execute() })
				r.RunUntilIdle()
			}
		}},
		// A step of a flow run by a nested RunReady (an OnEnd driving
		// its manual reactor, runReadyNested): the inner recover, then
		// the OnEnd's own deferred call (which gives back the running
		// flag it found, set), then the outer batch's recover.
		{"step in a batch an OnEnd runs (nested RunReady)", func(r *reactor.Reactor) func() {
			inOnEnd := false
			inner := New(r)
			inner.SetFlowName(name)
			inner.Add(func(*Steps) {
				if !inOnEnd {
					panic("the inner flow ran outside the OnEnd's drive")
				}
				runtime.Goexit()
			})
			outer := New(r)
			outer.SetFlowName(NewName("GOEXIT-OUTER"))
			X.OnEnd(outer, func(*Steps, string) {
				inOnEnd = true
				r.RunUntilIdle()
			})
			outer.Add(func(*Steps) { inner.Execute() })
			outer.Execute()
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
			var codes []string
			again.Add(probe, func(_ *Steps, code string) { codes = append(codes, "again: "+code) })
			atOnce := false
			r.Immediate(func() {
				again.Execute()
				atOnce = len(got) == 1
			})
			r.RunUntilIdle()
			if !atOnce || len(got) != 1 || got[0] != want || codes != nil {
				t.Errorf("an Execute on the loop after it: run inside it %v, labels %q, want %s; errors %q, want none", atOnce, got, want, codes)
			}
			// And RunReady's batch, driven by this goroutine.
			got = nil
			next := New(r)
			next.SetFlowName(name)
			next.Add(probe, func(_ *Steps, code string) { codes = append(codes, "next: "+code) }).Add(probe)
			next.Execute()
			r.RunUntilIdle()
			if len(got) != 2 || got[0] != want || got[1] != want || codes != nil {
				t.Errorf("the next flow of the name, on another goroutine: labels %q, want %s in both steps; errors %q, want none", got, want, codes)
			}
			if l := labelProbe(t); l != "" {
				t.Errorf("after the turn the driving goroutine still carries %s", l)
			}
		})
	}
}

// canceledInBatch makes a batch of two flows, a (named name) then b, where
// a's step cancels b: runBatch then finds b canceled since it was queued,
// and batchStopped ends it (cancelRun). b's step installs cancel (when not
// nil), starts a (queued: inside a step) and loops until its turn's
// budget queues b again, behind a. setup, when not nil, prepares b.
func canceledInBatch(r *reactor.Reactor, name *Name, setup func(b *Steps), cancel CancelFunc) func() {
	a, b := New(r), New(r)
	a.SetFlowName(name)
	a.Add(func(*Steps) { b.Cancel() })
	if setup != nil {
		setup(b)
	}
	b.Add(func(as *Steps) {
		if cancel != nil {
			as.SetCancel(cancel)
		}
		a.Execute()
		as.Loop(func(*Steps) {})
	})
	return func() {
		b.Execute()
		r.RunUntilIdle()
	}
}
