package abi_test

// The Sync kit on a foreign accessor: every call either
// works or fails the flow with InternalError; a syncprim object entered
// through its own Sync method keeps no slot after the section.

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// TestWrapMutexSyncMethodLeavesNoSlot: m.Sync(foreign, ...) called directly
// (not as.Sync(m, ...)) goes through the foreign engine's addSync too, so
// the Mutex holds no slot once the section is over.
func TestWrapMutexSyncMethodLeavesNoSlot(t *testing.T) {
	for _, where := range []string{"in a step", "on the root"} {
		t.Run(where, func(t *testing.T) {
			f := newForeign(t)
			m := syncprim.NewMutex(1, 0)
			ran := 0
			section := func(as *engine.Steps) {
				ran++
				as.Success(engine.Int(7))
			}
			if where == "on the root" {
				m.Sync(f.root, section, nil)
			} else {
				f.root.Add(func(as *engine.Steps) { m.Sync(as, section, nil) })
			}
			f.root.Add(func(as *engine.Steps) {
				if got := as.Arg(0).Int(); got != 7 {
					as.Error("Wrong", "section value lost")
				}
			})
			if st, code := f.run(); st != 1 {
				t.Fatalf("flow ended %d %q, want success", st, code)
			}
			if ran != 1 {
				t.Fatalf("section ran %d times, want 1", ran)
			}
			if s := m.Stats(); s.Holders != 0 || s.Queued != 0 {
				t.Fatalf("after the section: %+v, want the Mutex free", s)
			}
			f.free()
		})
	}
}

// TestWrapKitMisuseOnForeign: the kit calls a foreign flow cannot carry out
// fail it with InternalError instead of doing nothing.
func TestWrapKitMisuseOnForeign(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(as *engine.Steps)
	}{
		{"SetFinally", func(as *engine.Steps) { as.SetFinally(func(*engine.Steps) {}) }},
		{"Hold", func(as *engine.Steps) { as.Hold(t) }},
		{"Unhold", func(as *engine.Steps) { as.Unhold(t) }},
		{"ForwardArgs", func(as *engine.Steps) { as.ForwardArgs() }},
		{"Rebind outside AddWith", func(as *engine.Steps) { engine.Rebind(as, new(int)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newForeign(t)
			after := false
			f.root.Add(func(as *engine.Steps) {
				tc.call(as)
				after = true
			})
			if st, code := f.run(); st != 2 || code != engine.InternalError {
				t.Fatalf("flow ended %d %q, want error InternalError", st, code)
			}
			if after {
				t.Fatal("the callback went on after the misuse")
			}
			f.free()
		})
	}
}

// TestWrapBoundOnForeign: AddWith's value is Bound in the step, after
// Rebind, and in the cancel handler the step sets.
func TestWrapBoundOnForeign(t *testing.T) {
	f := newForeign(t)
	v, w := new(int), new(int)
	var inStep, afterRebind, inHandler *int
	f.root.Add(func(as *engine.Steps) {
		engine.AddWith(as, func(as *engine.Steps, got *int) {
			inStep = engine.Bound[int](as)
			engine.Rebind(as, w)
			afterRebind = engine.Bound[int](as)
			as.SetCancel(func(as *engine.Steps) { inHandler = engine.Bound[int](as) })
			as.Error("Stop") // an error unwinds through the step: its cancel handler runs
		}, v)
	}, func(as *engine.Steps, code string) {
		if code == "Stop" {
			as.Success()
		}
	})
	if st, code := f.run(); st != 1 {
		t.Fatalf("flow ended %d %q, want success", st, code)
	}
	if inStep != v || afterRebind != w {
		t.Fatalf("Bound: %p in the step (want %p), %p after Rebind (want %p)", inStep, v, afterRebind, w)
	}
	if inHandler != w {
		t.Logf("the foreign engine ran no cancel handler on the error (Bound there %p)", inHandler)
	}
	f.free()
}
