package engine_test

import (
	"errors"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Regressions found in review; each failed before its fix.

// Spec 1.2.1: an error handler accepts Add as implicit success, also the
// handler of a parallel step at level 0 of a root.
func TestRegressLevel0ParallelHandlerAdds(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	recovered := false
	root.Parallel(func(as *engine.Steps, code string) {
		as.Add(func(as *engine.Steps) { recovered = true })
	}).Add(func(as *engine.Steps) { as.Error("Boom") })
	p := root.Promise()
	r.RunUntilIdle()
	if _, err := p.Wait(); err != nil || !recovered {
		t.Fatalf("recovered=%v err=%v", recovered, err)
	}
}

// Completing the step's own External in its callback after adding
// sub-steps is a misuse, and no frame is lost.
func TestRegressExternalSuccessAfterAdd(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		ext := as.External()
		as.Add(func(*engine.Steps) {})
		ext.Success()
	})
	p := root.Promise()
	r.RunUntilIdle()
	_, err := p.Wait()
	var fe *engine.Error
	if !errors.As(err, &fe) || fe.Code != engine.InternalError {
		t.Fatalf("err=%v, want InternalError", err)
	}
	if st := engine.EngineStats(r); st.FramesLive != 0 {
		t.Fatalf("frames leaked: %+v", st)
	}
}

// A step that took an External and then added sub-steps is ended by its
// sub-steps: its External goes stale and cannot clobber their values.
func TestRegressParentExternalGoesStaleWhenSubStepsAdded(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	var extP, extC engine.External
	var got engine.Value
	root.Add(func(as *engine.Steps) {
		extP = as.External()
		as.Add(func(as *engine.Steps) { extC = as.External() })
		as.Add(func(as *engine.Steps) { got = as.Arg(0) })
	})
	p := root.Promise()
	r.RunUntilIdle()
	okC := extC.Success(engine.Int(1))
	okP := extP.Success(engine.Int(99))
	r.RunUntilIdle()
	if _, err := p.Wait(); err != nil || !okC || okP || got.Int() != 1 {
		t.Fatalf("okC=%v okP=%v got=%d err=%v; want true false 1 nil", okC, okP, got.Int(), err)
	}
}

// A Cancel that reaches the loop before the start of an Execute made off
// the loop cancels that run: its step never runs, and a later run is clean.
func TestRegressCancelBeforeStart(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	firstRan := false
	root.Add(func(as *engine.Steps) { firstRan = true })
	// Cancel on the loop ahead of the start task in the ring: another
	// goroutine executes the root while the loop runs, behind more than
	// one iteration's worth of ring tasks, and the loop's own Cancel (the
	// local queue) runs before the ring reaches the start.
	var p1 *engine.Promise
	r.Immediate(func() {
		posted := make(chan struct{})
		go func() {
			for i := 0; i < 1100; i++ {
				r.Immediate(func() {})
			}
			p1 = root.Promise()
			close(posted)
		}()
		<-posted
		root.Cancel()
	})
	r.RunUntilIdle()
	_, err := p1.Wait()
	var fe *engine.Error
	if !errors.As(err, &fe) || fe.Code != engine.Canceled || firstRan {
		t.Fatalf("first run: err=%v ran=%v; want Canceled, not run", err, firstRan)
	}
	secondRan := false
	root.Add(func(as *engine.Steps) { secondRan = true })
	p2 := root.Promise()
	r.RunUntilIdle()
	if _, err := p2.Wait(); err != nil || !secondRan {
		t.Fatalf("second run: err=%v ran=%v", err, secondRan)
	}
	if st := engine.EngineStats(r); st.FramesLive != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// An External error unwinds through its step like Error does: the step's
// cancel handler runs before the error handler, on and off the loop.
func TestRegressExternalErrorRunsCancelHandler(t *testing.T) {
	for _, offLoop := range []bool{false, true} {
		r := reactor.NewManual()
		root := engine.New(r)
		var log []string
		var ext engine.External
		root.Add(func(as *engine.Steps) {
			ext = as.External()
			as.SetCancel(func(*engine.Steps) { log = append(log, "cancel") })
		}, func(as *engine.Steps, code string) { log = append(log, "error "+code) })
		p := root.Promise()
		r.RunUntilIdle()
		if offLoop {
			ext.Error("Boom")
		} else {
			r.Immediate(func() { ext.Error("Boom") })
		}
		r.RunUntilIdle()
		p.Wait()
		if len(log) != 2 || log[0] != "cancel" || log[1] != "error Boom" {
			t.Fatalf("offLoop=%v: %v", offLoop, log)
		}
	}
}
