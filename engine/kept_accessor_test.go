package engine_test

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A step that waits (WaitExternal, SetTimeout, SetCancel)
// and kept its accessor, without External(), is finished by as.Success or
// as.Error called after its callback returned, as Success's doc says; the
// flow no longer hangs until its timeout. Each way in.
func TestKeptAccessorFinishesWaitingStep(t *testing.T) {
	waits := []struct {
		name string
		wait func(as *engine.Steps)
	}{
		{"WaitExternal", func(as *engine.Steps) { as.WaitExternal() }},
		{"SetTimeout", func(as *engine.Steps) { as.SetTimeout(time.Hour) }},
		{"SetCancel", func(as *engine.Steps) { as.SetCancel(func(*engine.Steps) {}) }},
	}
	finishes := []struct {
		name    string
		finish  func(as *engine.Steps)
		wantErr string
	}{
		{"Success", func(as *engine.Steps) { as.Success(engine.Int(42)) }, ""},
		{"Error", func(as *engine.Steps) { as.Error("Boom", "kept accessor") }, "Boom"},
	}
	froms := []struct {
		name string
		call func(t *testing.T, r *reactor.Reactor, fn func())
	}{
		{"another goroutine", func(t *testing.T, r *reactor.Reactor, fn func()) {
			done := make(chan struct{})
			go func() { defer close(done); fn() }()
			<-done
		}},
		{"a reactor callback", func(t *testing.T, r *reactor.Reactor, fn func()) { r.Immediate(fn) }},
		{"another flow's step", func(t *testing.T, r *reactor.Reactor, fn func()) {
			other := engine.New(r)
			other.Add(func(as *engine.Steps) { fn() })
			other.Execute()
		}},
	}
	for _, w := range waits {
		for _, f := range finishes {
			for _, from := range froms {
				t.Run(w.name+"/"+f.name+"/"+from.name, func(t *testing.T) {
					r := reactor.NewManual()
					var kept *engine.Steps
					root := engine.New(r)
					root.Add(func(as *engine.Steps) {
						w.wait(as)
						kept = as
					}).Add(func(as *engine.Steps) {
						as.Success(as.Arg(0)) // passes the value on
					})
					p := root.Promise()
					r.RunUntilIdle()
					from.call(t, r, func() { f.finish(kept) })
					r.RunUntilIdle()
					select {
					case <-p.Done():
					default:
						t.Fatal("the flow still waits: the kept accessor's call did nothing")
					}
					args, err := p.Wait()
					if f.wantErr != "" {
						if e, ok := err.(*engine.Error); !ok || e.Code != f.wantErr {
							t.Fatalf("err %v, want %s", err, f.wantErr)
						}
						return
					}
					if err != nil || args.At(0).Int() != 42 {
						t.Fatalf("%v %v, want success 42", args, err)
					}
				})
			}
		}
	}
}

// A step that waits and then adds sub-steps is finished by them: the kept
// accessor goes stale and its Success does nothing.
func TestKeptAccessorStaleAfterSubSteps(t *testing.T) {
	r := reactor.NewManual()
	var kept *engine.Steps
	var x engine.External
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.SetTimeout(time.Hour)
		kept = as
		as.Add(func(as *engine.Steps) { x = as.External() })
	})
	p := root.Promise()
	r.RunUntilIdle()
	done := make(chan struct{})
	go func() { defer close(done); kept.Success() }()
	<-done
	r.RunUntilIdle()
	if root.Executing() == false {
		t.Fatal("the parent's kept accessor ended a step that has sub-steps running")
	}
	x.Success()
	r.RunUntilIdle()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
}
