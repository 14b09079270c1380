package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// TestRootStepSpareNoStaleHandler: a root-level step Add takes from the
// root's spare frames (fBare: the step is given its fn alone, and the
// frame's second line is trusted to be empty) runs with no error handler
// of the step that had the frame before: a root run again alternates a
// step with an error handler and a failing step without one, and the
// failing step's error must reach the Promise unhandled, every time; the
// same with an AddWith step, whose bound value the plain step must not
// see.
func TestRootStepSpareNoStaleHandler(t *testing.T) {
	for _, withOnError := range []bool{true, false} {
		r := reactor.NewManual()
		root := New(r)
		handled := 0
		onerr := func(*Steps, string) { handled++ }
		for run := range 6 {
			if run%2 == 0 {
				if withOnError {
					root.Add(emptyStep, onerr)
				} else {
					AddWith(root, func(*Steps, *int) {}, new(int))
				}
			} else {
				root.Add(func(as *Steps) {
					if Bound[int](as) != nil {
						handled++ // an earlier AddWith step's value
					}
					as.Error("Boom")
				})
			}
			p := root.Promise()
			r.RunUntilIdle()
			_, err := p.Wait()
			if e, ok := err.(*Error); run%2 == 1 && (!ok || e.Code != "Boom") || run%2 == 0 && err != nil {
				t.Fatalf("onerror %v, run %d: %v", withOnError, run, err)
			}
			if handled != 0 {
				t.Fatalf("onerror %v, run %d: a plain step saw an earlier step's error handler or bound value (%d times)", withOnError, run, handled)
			}
		}
		root.Release()
	}
}
