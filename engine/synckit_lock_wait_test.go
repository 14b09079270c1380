package engine_test

// Tests of Lock.Wait (synckit_lock.go): a Slow step that waits as itself
// and, let in, runs again as the entered section.

import (
	"slices"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// turnstile is one flow inside; the others wait in FIFO order through
// Lock.Wait, and a Leave hands the object straight to the first of them.
type turnstile struct {
	lock   engine.Lock[turnstile]
	inside int
	q      []*turnstileWait
	log    *logger
}

// turnstileWait is a waiting step's record (Stack memory, rebound).
type turnstileWait struct {
	t      *turnstile
	ext    engine.External
	queued bool
}

func newTurnstile(log *logger) *turnstile {
	t := &turnstile{log: log}
	t.lock.Init(t, turnstileEnter, turnstileLeave, turnstileSlow)
	return t
}

func (t *turnstile) Sync(as *engine.Steps, f engine.ExecFunc, onerror engine.ErrorFunc) {
	engine.AddLocked(as, &t.lock, f, onerror)
}

func turnstileEnter(_ *engine.Steps, t *turnstile) bool {
	if t.inside > 0 {
		return false
	}
	t.inside++
	return true
}

func turnstileLeave(_ *engine.Steps, t *turnstile) {
	if t.log != nil {
		t.log.add("leave")
	}
	t.handOver()
}

// handOver gives the slot to the first waiter (inside stays 1), or frees it.
func (t *turnstile) handOver() {
	if len(t.q) == 0 {
		t.inside--
		return
	}
	w := t.q[0]
	t.q = t.q[1:]
	w.queued = false
	w.ext.Pass()
}

func turnstileSlow(as *engine.Steps, t *turnstile, f engine.ExecFunc) {
	if t.log != nil {
		t.log.add("queue")
	}
	w := engine.Stack[turnstileWait](as)
	w.t, w.queued = t, true
	engine.Rebind(as, w)
	w.ext = t.lock.Wait(as, f)
	t.q = append(t.q, w)
	as.SetCancel(turnstileCancel)
}

// turnstileCancel: canceled while waiting, the step leaves the queue, or
// passes the slot on if it had been handed it already.
func turnstileCancel(as *engine.Steps) {
	w := engine.Bound[turnstileWait](as)
	if w.t.log != nil {
		w.t.log.add("unqueue")
	}
	if !w.queued {
		w.t.handOver()
		return
	}
	if i := slices.Index(w.t.q, w); i >= 0 {
		w.t.q = slices.Delete(w.t.q, i, i+1)
	}
}

// TestLockWaitEntersTheSection: a flow queued behind another enters its
// section as the same step when it is let in, with Holds true, its values,
// its error handler, and one Leave however the section ends.
func TestLockWaitEntersTheSection(t *testing.T) {
	for _, tc := range []struct {
		end  string
		want []string
		code string
	}{
		{"success", []string{"in 5 true", "leave", "next"}, ""},
		{"success-sub", []string{"in 5 true", "sub true", "leave", "next"}, ""},
		{"error", []string{"in 5 true", "handler Boom", "leave"}, "Boom"},
		{"cancel", []string{"in 5 true", "cancel", "leave"}, engine.Canceled},
		{"external", []string{"in 5 true", "leave", "next"}, ""},
	} {
		t.Run(tc.end, func(t *testing.T) {
			r := reactor.NewManual()
			var log logger
			ts := newTurnstile(&log)
			var first, ext engine.External
			holder := engine.New(r)
			holder.Sync(ts, func(as *engine.Steps) { first = as.External() })
			holder.Execute()
			r.RunUntilIdle()

			root := engine.New(r)
			root.Add(func(as *engine.Steps) { as.Success(engine.Int(5)) })
			root.Sync(ts, func(as *engine.Steps) {
				log.add("in %d %v", as.Arg(0).Int(), as.Holds(ts))
				switch tc.end {
				case "success-sub":
					as.Add(func(as *engine.Steps) { log.add("sub %v", as.Holds(ts)) })
				case "error":
					as.Error("Boom")
				case "cancel":
					as.SetCancel(func(*engine.Steps) { log.add("cancel") })
				case "external":
					ext = as.External()
				}
			}, func(as *engine.Steps, code string) { log.add("handler %s", code) })
			root.Add(log.fn("next"))
			p := root.Promise()
			r.RunUntilIdle()
			log.check(t, "queue")
			log.lines = nil

			first.Pass() // the holder's section ends: its Leave hands over
			r.RunUntilIdle()
			switch tc.end {
			case "cancel":
				root.Cancel()
			case "external":
				ext.Pass()
			}
			r.RunUntilIdle()
			_, err := waitDone(t, p)
			if tc.code == "" {
				wantNoErr(t, err)
			} else {
				wantCode(t, err, tc.code)
			}
			// The holder's leave first, then the waiter's section.
			log.check(t, append([]string{"leave"}, tc.want...)...)
			if ts.inside != 0 || len(ts.q) != 0 {
				t.Errorf("inside %d, queued %d after both flows ended, want 0, 0", ts.inside, len(ts.q))
			}
			holder.Release()
			root.Release()
		})
	}
}

// TestLockWaitCancel: a waiter canceled before it is let in runs its
// cancel handler (out of the queue) and no Leave; one canceled after the
// pass but before its section started holds the object already: its Leave
// runs (passing the slot on), not its cancel handler. The section never
// runs.
func TestLockWaitCancel(t *testing.T) {
	for _, passed := range []bool{false, true} {
		r := reactor.NewManual()
		var log logger
		ts := newTurnstile(&log)
		var first engine.External
		root := engine.New(r)
		holder := engine.New(r)
		holder.Sync(ts, func(as *engine.Steps) { first = as.External() })
		if passed {
			// Right after the holder's Leave passed the waiter's External,
			// in the same turn: the waiter's section has not started.
			holder.Add(func(*engine.Steps) { root.Cancel() })
		}
		holder.Execute()
		r.RunUntilIdle()
		root.Sync(ts, log.fn("section"))
		p := root.Promise()
		r.RunUntilIdle()
		if !passed {
			root.Cancel()
			r.RunUntilIdle()
		}
		first.Pass()
		r.RunUntilIdle()
		_, err := waitDone(t, p)
		wantCode(t, err, engine.Canceled)
		if passed {
			log.check(t, "queue", "leave", "leave")
		} else {
			log.check(t, "queue", "unqueue", "leave")
		}
		if ts.inside != 0 || len(ts.q) != 0 {
			t.Errorf("passed %v: inside %d, queued %d, want 0, 0", passed, ts.inside, len(ts.q))
		}
		holder.Release()
		root.Release()
	}
}

// TestLockWaitPassFromAnotherGoroutine: the External that lets a waiter in
// may be passed off the loop; the section then runs on the loop.
func TestLockWaitPassFromAnotherGoroutine(t *testing.T) {
	r := reactor.NewManual()
	ts := newTurnstile(nil)
	ts.inside = 1 // held by nobody's flow: the test hands it over itself
	var in bool
	root := engine.New(r)
	root.Sync(ts, func(as *engine.Steps) { in = as.Holds(ts) })
	p := root.Promise()
	r.RunUntilIdle()
	if len(ts.q) != 1 {
		t.Fatalf("%d waiters, want 1", len(ts.q))
	}
	w := ts.q[0]
	ts.q = nil
	w.queued = false
	done := make(chan bool)
	go func() { done <- w.ext.Pass() }()
	if !<-done {
		t.Fatal("Pass from another goroutine was refused")
	}
	r.RunUntilIdle()
	_, err := waitDone(t, p)
	wantNoErr(t, err)
	if !in || ts.inside != 0 {
		t.Errorf("Holds in the section %v, inside %d after; want true, 0", in, ts.inside)
	}
	root.Release()
}

// TestLockWaitError: an error through the waiter's External fails the
// step (its cancel handler and error handler run), with no section and no
// Leave.
func TestLockWaitError(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	ts := newTurnstile(&log)
	ts.inside = 1
	root := engine.New(r)
	root.Sync(ts, log.fn("section"), func(as *engine.Steps, code string) { log.add("handler %s", code) })
	p := root.Promise()
	r.RunUntilIdle()
	ts.q[0].ext.Error("Nope")
	r.RunUntilIdle()
	_, err := waitDone(t, p)
	wantCode(t, err, "Nope")
	log.check(t, "queue", "unqueue", "handler Nope")
	root.Release()
}

// TestLockWaitMisuse: Wait outside its Lock's Slow step, after sub-steps,
// or passed inside the Slow's own callback fails the step with
// InternalError.
func TestLockWaitMisuse(t *testing.T) {
	for _, tc := range []string{"outside", "other-lock", "after-add", "own-pass"} {
		t.Run(tc, func(t *testing.T) {
			r := reactor.NewManual()
			ts := newTurnstile(nil)
			other := newTurnstile(nil)
			slow := func(as *engine.Steps, x *turnstile, f engine.ExecFunc) {
				switch tc {
				case "other-lock":
					other.lock.Wait(as, f)
				case "after-add":
					as.Add(f)
					x.lock.Wait(as, f)
				case "own-pass":
					x.lock.Wait(as, f).Pass()
				}
			}
			ts.lock.Init(ts, turnstileEnter, turnstileLeave, slow)
			ts.inside = 1
			root := engine.New(r)
			if tc == "outside" {
				root.Add(func(as *engine.Steps) { ts.lock.Wait(as, func(*engine.Steps) {}) })
			} else {
				root.Sync(ts, func(*engine.Steps) { t.Error("the section ran") })
			}
			p := root.Promise()
			r.RunUntilIdle()
			_, err := waitDone(t, p)
			wantCode(t, err, engine.InternalError)
			root.Release()
		})
	}
}

// TestLockWaitNoAllocs: a queued entry through Lock.Wait allocates nothing.
func TestLockWaitNoAllocs(t *testing.T) {
	engine.SkipIfDebug(t)
	r := reactor.NewManual()
	ts := newTurnstile(nil)
	ts.q = make([]*turnstileWait, 0, 4)
	var first engine.External
	var n int
	holderStep := func(as *engine.Steps) { first = as.External() }
	section := func(as *engine.Steps) { n++ }
	waiterStep := func(as *engine.Steps) { as.Sync(ts, section) }
	holder, waiter := engine.New(r), engine.New(r)
	run := func() {
		ts.q = ts.q[:0]
		holder.Sync(ts, holderStep)
		holder.Execute()
		waiter.Add(waiterStep)
		waiter.Execute()
		r.RunUntilIdle()
		first.Pass()
		r.RunUntilIdle()
	}
	run()
	if a := testing.AllocsPerRun(200, run); a != 0 {
		t.Errorf("%v allocations per queued entry, want 0", a)
	}
	if n != 202 || ts.inside != 0 {
		t.Errorf("%d sections ran, %d inside; want 202, 0", n, ts.inside)
	}
	holder.Release()
	waiter.Release()
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
