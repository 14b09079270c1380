package engine_test

import (
	"errors"
	"strings"
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

// Promise executes: called after Execute (a new user's first guess) its
// Wait says so, and on a released root it says that instead.
func TestPromiseRefusalSaysWhy(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { as.WaitExternal() })
	root.Execute()
	_, err := root.Promise().Wait()
	var e *engine.Error
	if !errors.As(err, &e) || e.Code != engine.InternalError || !strings.Contains(e.Info, "call Promise instead of Execute") {
		t.Errorf("Promise after Execute: %v, want InternalError saying to call Promise instead", err)
	}
	root.Cancel()
	r.RunUntilIdle()
	root.Release()
}

// Promise on a released root says that it was released. Not in the
// asyncsteps_debug build, where that call panics naming it
// (released_debug_test.go).
func TestPromiseOnReleasedRootSaysSo(t *testing.T) {
	engine.SkipIfDebug(t)
	r := reactor.NewManual()
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {})
	root.Release()
	_, err := root.Promise().Wait()
	var e *engine.Error
	if !errors.As(err, &e) || e.Code != engine.InternalError || e.Info != "Promise: the root was released" {
		t.Errorf("Promise after Release: %v, want InternalError: Promise: the root was released", err)
	}
}
