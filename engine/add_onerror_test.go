package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A root-level step with an error handler, added to a root run again (its
// spare frames: Add's short path for it, addRootOnError), keeps its
// handler: a failure in the step or in the step after it reaches the one
// whose step failed, each run, and a step after a handled failure runs. A
// root whose frames are not spare (a fresh root, the first run) takes
// addSlow's way with the same result; no run allocates once warm.
func TestAddOnErrorOnRootRunAgain(t *testing.T) {
	SkipIfDebug(t)
	r := reactor.NewManual()
	root := New(r)
	var handled []string
	var after int
	fail := func(as *Steps) { as.Error("Boom", "") }
	onErr := func(as *Steps, code string) {
		handled = append(handled, code)
		as.Success()
	}
	then := func(*Steps) { after++ }
	run := func() {
		root.Add(fail, onErr)
		root.Add(emptyStep, onErr)
		root.Add(then)
		root.Execute()
		r.RunUntilIdle()
	}
	for i := 0; i < 3; i++ {
		handled = handled[:0]
		after = 0
		run()
		if len(handled) != 1 || handled[0] != "Boom" || after != 1 {
			t.Fatalf("run %d: handled %q, steps after %d; want [Boom] and 1", i, handled, after)
		}
	}
	// The allocation count without the failure (an error's own cost is
	// not Add's).
	warm := func() {
		root.Add(emptyStep, onErr)
		root.Add(then)
		root.Execute()
		r.RunUntilIdle()
	}
	after = 0
	if got := testing.AllocsPerRun(50, warm); got != 0 {
		t.Errorf("a root run again with an error handler: %v allocs per run, want 0", got)
	}
	if after != 51 {
		t.Errorf("%d runs of the step after it, want 51", after)
	}
}
