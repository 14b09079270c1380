package engine_test

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// RunReady runs a flow executed from a loop callback (and held back from
// running inside Execute by X.DeferStart) before that callback returns;
// from inside a step or off the loop it does nothing.
func TestRunReadyRunsFlowsNow(t *testing.T) {
	r := reactor.NewManual()
	var log []string
	root := engine.New(r)
	engine.X.DeferStart(root, true)
	root.Add(func(as *engine.Steps) {
		log = append(log, "step")
		if engine.RunReady(r) {
			t.Error("RunReady inside a step reported flows still ready")
		}
		log = append(log, "step end")
	})
	other := engine.New(r)
	engine.X.DeferStart(other, true)
	other.Add(func(as *engine.Steps) { log = append(log, "other") })
	r.Immediate(func() {
		root.Execute()
		other.Execute()
		log = append(log, "before")
		engine.RunReady(r)
		log = append(log, "after")
	})
	if engine.RunReady(r) {
		t.Error("RunReady off the loop reported flows still ready")
	}
	r.RunUntilIdle()
	want := []string{"before", "step", "step end", "other", "after"}
	if len(log) != len(want) {
		t.Fatalf("log %q, want %q", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("log %q, want %q", log, want)
		}
	}
}
