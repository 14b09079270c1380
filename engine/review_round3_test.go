package engine_test

// Tests from the round 3 review: interactions between changes merged from
// separate branches.

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// TestLockWaitSuccessOnLoop: a Lock.Wait External let in by Success with
// values on the loop (External.Success's on-loop short path) enters the
// section with those values, as Pass does and as Success from another
// goroutine does; the step must not just complete.
func TestLockWaitSuccessOnLoop(t *testing.T) {
	for _, offLoop := range []bool{false, true} {
		r := reactor.NewManual()
		var log logger
		ts := newTurnstile(&log)
		ts.inside = 1 // held by nobody's flow: the test hands it over itself
		root := engine.New(r)
		root.Sync(ts, func(as *engine.Steps) {
			log.add("in %d %v", as.Arg(0).Int(), as.Holds(ts))
		})
		root.Add(log.fn("next"))
		p := root.Promise()
		r.RunUntilIdle()
		if len(ts.q) != 1 {
			t.Fatalf("%d waiters, want 1", len(ts.q))
		}
		w := ts.q[0]
		ts.q = nil
		w.queued = false
		if offLoop {
			done := make(chan bool)
			go func() { done <- w.ext.Success(engine.Int(7)) }()
			if !<-done {
				t.Fatal("Success from another goroutine was refused")
			}
		} else {
			// On the loop: from a step of another flow.
			other := engine.New(r)
			other.Add(func(*engine.Steps) {
				if !w.ext.Success(engine.Int(7)) {
					t.Error("Success on the loop was refused")
				}
			})
			other.Execute()
			defer other.Release()
		}
		r.RunUntilIdle()
		_, err := waitDone(t, p)
		wantNoErr(t, err)
		log.check(t, "queue", "in 7 true", "leave", "next")
		if ts.inside != 0 {
			t.Errorf("off loop %v: inside %d after the flow ended, want 0", offLoop, ts.inside)
		}
		root.Release()
	}
}

// TestBatchAddedRootReleasedAndReused: a root added to a Batch, then
// released and handed out again by New before Execute, belongs to its new
// owner: Execute must not start the new owner's flow, and the entry's
// Result is an InternalError, as for a root released and not reused.
func TestBatchAddedRootReleasedAndReused(t *testing.T) {
	r := reactor.NewManual()
	var b engine.Batch
	stale := engine.New(r)
	i := b.Add(stale)
	var filler []*engine.Steps
	for range 32 {
		filler = append(filler, engine.New(r))
	}
	stale.Release()
	for _, s := range filler { // past the free list's quarantine
		s.Release()
	}
	var reused *engine.Steps
	var others []*engine.Steps
	for range 64 {
		s := engine.New(r)
		if s == stale {
			reused = s
			break
		}
		others = append(others, s)
	}
	if reused == nil {
		t.Skip("New did not hand the released root out again")
	}
	ran := false
	reused.Add(func(*engine.Steps) { ran = true })
	b.Execute()
	r.RunUntilIdle()
	b.Wait()
	if ran || reused.Executing() {
		t.Errorf("the Batch ran the new owner's root (ran %v, executing %v)", ran, reused.Executing())
	}
	if _, err := b.Result(i); err == nil {
		t.Error("Result of a root released after Add: nil error, want InternalError")
	} else {
		wantCode(t, err, engine.InternalError)
	}
	reused.Release()
	for _, s := range others {
		s.Release()
	}
}

// TestLockWaitSuccessInSlow: a Slow that calls Lock.Wait and then succeeds
// its step itself (Steps.Success, the accessor's form of passing the
// External inside the Slow's own callback) is a misuse: the step fails
// with InternalError; it must not complete with the section never run.
func TestLockWaitSuccessInSlow(t *testing.T) {
	for _, how := range []string{"accessor", "external"} {
		r := reactor.NewManual()
		ts := newTurnstile(nil)
		slow := func(as *engine.Steps, x *turnstile, f engine.ExecFunc) {
			ext := x.lock.Wait(as, f)
			if how == "accessor" {
				as.Success()
			} else {
				ext.Success()
			}
		}
		ts.lock.Init(ts, turnstileEnter, turnstileLeave, slow)
		ts.inside = 1
		root := engine.New(r)
		ran := false
		root.Sync(ts, func(*engine.Steps) { ran = true })
		p := root.Promise()
		r.RunUntilIdle()
		_, err := waitDone(t, p)
		if err == nil {
			t.Errorf("%s: the flow succeeded with the section never run (ran %v)", how, ran)
		} else {
			wantCode(t, err, engine.InternalError)
		}
		root.Release()
	}
}

// TestLockWaitSlowTimeout: a Slow that limits its wait with SetTimeout
// and is let in before it expires: the timeout was the wait's, and must
// not outlive the step (its frame goes back to the pool when the section
// ends; a timer left armed on it would fail whichever step has the frame
// next). A later step of another flow that waits past the deadline is not
// touched, and the waiter's own flow succeeds.
func TestLockWaitSlowTimeout(t *testing.T) {
	r := reactor.NewManual()
	ts := newTurnstile(nil)
	slow := func(as *engine.Steps, x *turnstile, f engine.ExecFunc) {
		as.SetTimeout(10 * time.Millisecond)
		turnstileSlow(as, x, f)
	}
	ts.lock.Init(ts, turnstileEnter, turnstileLeave, slow)
	ts.inside = 1
	root := engine.New(r)
	ran := false
	root.Sync(ts, func(as *engine.Steps) { ran = as.Holds(ts) })
	p := root.Promise()
	r.RunUntilIdle()
	if len(ts.q) != 1 {
		t.Fatalf("%d waiters, want 1", len(ts.q))
	}
	ts.handOver()
	r.RunUntilIdle()
	_, err := waitDone(t, p)
	wantNoErr(t, err)
	if !ran || ts.inside != 0 {
		t.Fatalf("section ran %v, inside %d; want true, 0", ran, ts.inside)
	}
	// Another flow's steps take frames on the loop now (the free list is
	// LIFO); its sub-step waits past the old deadline.
	var ext engine.External
	other := engine.New(r)
	other.Add(func(as *engine.Steps) {
		as.Add(func(as *engine.Steps) { ext = as.External() })
	})
	other.Add(func(as *engine.Steps) { as.Success(engine.Int(1)) })
	op := other.Promise()
	r.RunUntilIdle()
	r.Advance(50 * time.Millisecond)
	r.RunUntilIdle()
	ext.Success()
	r.RunUntilIdle()
	_, err = waitDone(t, op)
	wantNoErr(t, err)
	other.Release()
	root.Release()
}

// TestLockWaitErrorHandlerRecovers: an error through a waiter's External
// fails the step; its error handler may recover with Success, as any
// step's may: the flow goes on (no section, no Leave). Success there is
// not Lock.Wait's misuse of succeeding inside the Slow.
func TestLockWaitErrorHandlerRecovers(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	ts := newTurnstile(&log)
	ts.inside = 1
	root := engine.New(r)
	root.Sync(ts, log.fn("section"), func(as *engine.Steps, code string) {
		log.add("handler %s", code)
		as.Success(engine.Int(9))
	})
	root.Add(func(as *engine.Steps) { log.add("next %d", as.Arg(0).Int()) })
	p := root.Promise()
	r.RunUntilIdle()
	ts.q[0].ext.Error("Nope")
	r.RunUntilIdle()
	_, err := waitDone(t, p)
	wantNoErr(t, err)
	log.check(t, "queue", "unqueue", "handler Nope", "next 9")
	root.Release()
}
