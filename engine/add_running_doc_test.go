package engine_test

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// The package doc's life of a root: a call on a running root other than
// those allowed fails the calling step when a step of another flow makes
// it; off the loop Add and Execute do nothing and Promise reports
// InternalError; the flow itself goes on untouched.
func TestRunningRootMisuseAsDocumented(t *testing.T) {
	r := reactor.NewManual()
	a := engine.New(r)
	var ext engine.External
	a.Add(func(as *engine.Steps) { ext = as.External() })
	pa := a.Promise()
	r.RunUntilIdle()
	if !a.Executing() {
		t.Fatal("a waiting root is not Executing")
	}

	b := engine.New(r)
	b.Add(func(as *engine.Steps) { a.Add(func(*engine.Steps) { t.Error("a step added from another flow ran") }) })
	pb := b.Promise()
	r.RunUntilIdle()
	if _, err := pb.Wait(); codeOf(err) != engine.InternalError {
		t.Errorf("Add on a running root from another flow's step: %v, want InternalError", err)
	}

	a.Add(func(*engine.Steps) { t.Error("a step added off the loop ran") })
	a.Execute()
	if _, err := a.Promise().Wait(); codeOf(err) != engine.InternalError {
		t.Errorf("Promise on a running root: %v, want InternalError", err)
	}
	if !ext.Success(engine.Int(5)) {
		t.Fatal("the flow's External was spoiled by the misuses")
	}
	r.RunUntilIdle()
	args, err := pa.Wait()
	if err != nil || args.At(0).Int() != 5 {
		t.Errorf("the flow ended %v %v, want [Int(5)] <nil>", args, err)
	}
	a.Release()
	b.Release()
}
