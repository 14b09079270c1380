package engine_test

// Timeouts (FTN12 1.3, 2.2.2 setTimeout), cancel handlers and root.Cancel
// (1.3, 1.4, 2.2.3; CONTRACT.md "Cancel handlers and unwinding").

import (
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// ---------------------------------------------------------------- timeouts

func TestTimeoutSuccessBeforeExpiry(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.SetTimeout(100 * time.Millisecond)
		ext := as.External()
		r.Deferred(50*time.Millisecond, func() { log.add("ext=%v", ext.Success(engine.Str("ok"))) })
	}, func(as *engine.Steps, code string) { log.add("handler %s", code) })
	p := root.Promise()
	r.RunUntilIdle()
	r.Advance(50 * time.Millisecond)
	args, err := waitDone(t, p)
	wantNoErr(t, err)
	if args.At(0).Str() != "ok" {
		t.Fatalf("result %q", args.At(0).Str())
	}
	r.Advance(time.Second) // the canceled timeout must never fire
	log.check(t, "ext=true")
}

func TestTimeoutExpiry(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	start := r.Now()
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.SetTimeout(100 * time.Millisecond)
	}, func(as *engine.Steps, code string) {
		log.add("handler %s at %v", code, r.Now().Sub(start))
	})
	p := root.Promise()
	r.RunUntilIdle()
	r.Advance(99 * time.Millisecond)
	if isDone(p) || len(log.lines) > 0 {
		t.Fatalf("timed out before 100ms: %q", log.lines)
	}
	r.Advance(time.Millisecond)
	_, err := waitDone(t, p)
	wantCode(t, err, engine.Timeout)
	log.check(t, "handler Timeout at 100ms")
}

func TestTimeoutCancelsWaitingDescendantsInnermostFirst(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { // A
		as.SetTimeout(100 * time.Millisecond)
		as.Add(func(as *engine.Steps) { // B
			as.SetCancel(func(*engine.Steps) { log.add("cancel B") })
			as.Add(func(as *engine.Steps) { // C
				as.SetCancel(func(*engine.Steps) { log.add("cancel C") })
			}, func(as *engine.Steps, code string) { log.add("handler C %s", code) })
		}, func(as *engine.Steps, code string) { log.add("handler B %s", code) })
	}, func(as *engine.Steps, code string) {
		log.add("handler A %s", code)
		as.Success(engine.Str("recovered"))
	})
	root.Add(func(as *engine.Steps) { log.add("next %s", as.Arg(0).Str()) })
	p := root.Promise()
	r.RunUntilIdle()
	r.Advance(100 * time.Millisecond)
	_, err := waitDone(t, p)
	wantNoErr(t, err)
	log.check(t, "cancel C", "cancel B", "handler A Timeout", "next recovered")
}

func TestTimeoutOfStepWithSubSteps(t *testing.T) {
	t.Run("subStepsFinishInTime", func(t *testing.T) {
		r := reactor.NewManual()
		var log logger
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			as.SetTimeout(100 * time.Millisecond)
			as.Add(func(as *engine.Steps) {
				ext := as.External()
				r.Deferred(60*time.Millisecond, func() { ext.Success(engine.Int(1)) })
			})
			as.Add(func(as *engine.Steps) { log.add("sub2 %d", as.Arg(0).Int()) })
		}, func(as *engine.Steps, code string) { log.add("handler %s", code) })
		root.Add(log.fn("next"))
		p := root.Promise()
		r.RunUntilIdle()
		r.Advance(60 * time.Millisecond)
		_, err := waitDone(t, p)
		wantNoErr(t, err)
		r.Advance(time.Second)
		log.check(t, "sub2 1", "next")
	})
	t.Run("subStepsTooSlow", func(t *testing.T) {
		r := reactor.NewManual()
		var log logger
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			as.SetTimeout(100 * time.Millisecond)
			as.Add(func(as *engine.Steps) {
				ext := as.External()
				r.Deferred(60*time.Millisecond, func() { ext.Success() })
			})
			as.Add(func(as *engine.Steps) {
				log.add("sub2")
				as.WaitExternal() // never finished
			}, func(as *engine.Steps, code string) { log.add("sub2 handler %s", code) })
		}, func(as *engine.Steps, code string) { log.add("handler %s", code) })
		p := root.Promise()
		r.RunUntilIdle()
		r.Advance(99 * time.Millisecond)
		if isDone(p) {
			t.Fatal("ended early")
		}
		r.Advance(time.Millisecond)
		_, err := waitDone(t, p)
		wantCode(t, err, engine.Timeout)
		log.check(t, "sub2", "handler Timeout")
	})
}

func TestTimeoutReplacedBySecondCall(t *testing.T) {
	// Spec 1.9: repeated setTimeout calls override the earlier ones.
	r := reactor.NewManual()
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.SetTimeout(50 * time.Millisecond)
		as.SetTimeout(200 * time.Millisecond)
	})
	p := root.Promise()
	r.RunUntilIdle()
	r.Advance(150 * time.Millisecond)
	if isDone(p) {
		_, err := p.Wait()
		t.Fatalf("first timeout still fired: %v", err)
	}
	r.Advance(50 * time.Millisecond)
	_, err := waitDone(t, p)
	wantCode(t, err, engine.Timeout)
}

func TestStaleTimeoutNeverHitsReusedMemory(t *testing.T) {
	r := reactor.NewManual()
	// Many flows whose timed steps succeed early; their timers must be dead.
	for i := 0; i < 50; i++ {
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			as.SetTimeout(100 * time.Millisecond)
			ext := as.External()
			r.Immediate(func() { ext.Success() })
		})
		_, err := runFlow(t, r, root)
		wantNoErr(t, err)
		root.Release()
	}
	// New flows that wait without a timeout reuse that memory.
	exts := make([]engine.External, 50)
	ps := make([]*engine.Promise, 50)
	for i := range ps {
		root := engine.New(r)
		root.Add(func(as *engine.Steps) { exts[i] = as.External() })
		ps[i] = root.Promise()
	}
	r.RunUntilIdle()
	r.Advance(time.Second)
	for i, p := range ps {
		if isDone(p) {
			_, err := p.Wait()
			t.Fatalf("flow %d ended by a stale timer: %v", i, err)
		}
	}
	for i, x := range exts {
		if !x.Success(engine.Int(int64(i))) {
			t.Fatalf("External %d rejected", i)
		}
	}
	r.RunUntilIdle()
	for i, p := range ps {
		args, err := waitDone(t, p)
		wantNoErr(t, err)
		if args.At(0).Int() != int64(i) {
			t.Fatalf("flow %d got %d", i, args.At(0).Int())
		}
	}
}

// ---------------------------------------------------------------- cancel handlers and errors

func TestCancelHandlerRunsBeforeErrorHandlerWhenErrorUnwindsThrough(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { // A
		as.SetCancel(func(*engine.Steps) { log.add("cancel A") })
		as.Add(func(as *engine.Steps) { // B
			as.SetCancel(func(*engine.Steps) { log.add("cancel B") })
			as.Add(func(as *engine.Steps) { as.Error("E") })
		}, func(as *engine.Steps, code string) { log.add("handler B %s", code) })
	}, func(as *engine.Steps, code string) { log.add("handler A %s", code) })
	_, err := runFlow(t, r, root)
	wantCode(t, err, "E")
	r.RunUntilIdle()
	log.check(t, "cancel B", "handler B E", "cancel A", "handler A E")
}

func TestCancelHandlerNotRunOnSuccessOrRecoveredBelow(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { // A: its sub-step's error is recovered below it
		as.SetCancel(func(*engine.Steps) { log.add("cancel A") })
		as.Add(func(as *engine.Steps) { as.Error("E") }, func(as *engine.Steps, code string) {
			log.add("recovered %s", code)
			as.Success()
		})
	})
	root.Add(func(as *engine.Steps) { // B: completed by External
		as.SetCancel(func(*engine.Steps) { log.add("cancel B") })
		ext := as.External()
		r.Immediate(func() { ext.Success() })
	})
	root.Add(log.fn("end"))
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "recovered E", "end")
}

// ---------------------------------------------------------------- root.Cancel

func TestRootCancelRunsPendingCancelHandlersOnce(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { // A
		as.SetCancel(func(*engine.Steps) { log.add("cancel A") })
		as.Add(func(as *engine.Steps) { // B
			as.SetCancel(func(*engine.Steps) { log.add("cancel B") })
			as.Parallel(func(as *engine.Steps, code string) { log.add("handler P") }).
				Add(func(as *engine.Steps) {
					as.SetCancel(func(*engine.Steps) { log.add("cancel P1") })
				}, func(as *engine.Steps, code string) { log.add("handler P1") }).
				Add(func(as *engine.Steps) {
					as.Add(func(as *engine.Steps) {
						as.SetCancel(func(*engine.Steps) { log.add("cancel P2") })
					})
				})
		}, func(as *engine.Steps, code string) { log.add("handler B") })
	}, func(as *engine.Steps, code string) { log.add("handler A") })
	root.Add(log.fn("never"))
	p := root.Promise()
	r.RunUntilIdle()
	if isDone(p) || len(log.lines) != 0 {
		t.Fatalf("flow not waiting: %q", log.lines)
	}
	root.Cancel()
	root.Cancel()
	r.RunUntilIdle()
	root.Cancel()
	r.RunUntilIdle()
	_, err := waitDone(t, p)
	wantCode(t, err, engine.Canceled)
	l := log.lines
	if len(l) != 4 {
		t.Fatalf("want exactly 4 cancel handlers, each once: %q", l)
	}
	branches := []string{l[0], l[1]}
	sort.Strings(branches)
	if branches[0] != "cancel P1" || branches[1] != "cancel P2" || l[2] != "cancel B" || l[3] != "cancel A" {
		t.Fatalf("cancel handlers not innermost first / error handler called: %q", l)
	}
}

func TestRootCancelStaleExternal(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	var ext engine.External
	root.Add(func(as *engine.Steps) { ext = as.External() })
	p := root.Promise()
	r.RunUntilIdle()
	root.Cancel()
	r.RunUntilIdle()
	_, err := waitDone(t, p)
	wantCode(t, err, engine.Canceled)
	if ext.Success() {
		t.Fatal("External.Success on a canceled step returned true")
	}
	if ext.Error("X") {
		t.Fatal("External.Error on a canceled step returned true")
	}
}

func TestRootCancelFromAnotherGoroutine(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.SetCancel(func(*engine.Steps) { log.add("cancel") })
	}, func(as *engine.Steps, code string) { log.add("handler") })
	p := root.Promise()
	r.RunUntilIdle()
	go root.Cancel()
	driveUntil(t, r, func() bool { return isDone(p) })
	_, err := p.Wait()
	wantCode(t, err, engine.Canceled)
	log.check(t, "cancel")
}

func TestRootCancelAfterEndDoesNothing(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	root.SuccessStep(engine.Int(1))
	args, err := runFlow(t, r, root)
	wantNoErr(t, err)
	root.Cancel()
	r.RunUntilIdle()
	if args.At(0).Int() != 1 {
		t.Fatal("result changed")
	}
	// The root still works afterwards, and the late Cancel does not hit the new run.
	root.Add(func(as *engine.Steps) {
		ext := as.External()
		r.Deferred(time.Millisecond, func() { ext.Success(engine.Int(2)) })
	})
	p := root.Promise()
	r.RunUntilIdle()
	r.Advance(time.Millisecond)
	args, err = waitDone(t, p)
	wantNoErr(t, err)
	if args.At(0).Int() != 2 {
		t.Fatalf("second run got %d", args.At(0).Int())
	}
}

func TestExternalErrorOnWaitingStepCancelHandlerConsistency(t *testing.T) {
	// Whether a waiting step's own cancel handler runs when that step is
	// failed by External.Error is not spelled out; but CONTRACT.md does not
	// distinguish the goroutine an External is used from, so both must
	// behave the same.
	run := func(fromGoroutine bool) []string {
		r := reactor.NewManual()
		var log logger
		release := make(chan struct{})
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			as.SetCancel(func(*engine.Steps) { log.add("cancel") })
			ext := as.External()
			if fromGoroutine {
				go func() { <-release; ext.Error("E") }()
			} else {
				r.Immediate(func() { ext.Error("E") })
			}
		}, func(as *engine.Steps, code string) { log.add("handler %s", code) })
		p := root.Promise()
		r.RunUntilIdle()
		close(release)
		driveUntil(t, r, func() bool { return isDone(p) })
		return log.lines
	}
	onLoop, offLoop := run(false), run(true)
	if len(onLoop) != len(offLoop) {
		t.Fatalf("External.Error on the loop gives %q, from a goroutine %q", onLoop, offLoop)
	}
	for i := range onLoop {
		if onLoop[i] != offLoop[i] {
			t.Fatalf("External.Error on the loop gives %q, from a goroutine %q", onLoop, offLoop)
		}
	}
}

func TestSetTimeoutThenImmediateSuccess(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.SetTimeout(10 * time.Millisecond)
		as.Success(engine.Int(1))
	}, func(as *engine.Steps, code string) { log.add("handler %s", code) })
	root.Add(func(as *engine.Steps) {
		log.add("second got %d", as.Arg(0).Int())
		ext := as.External()
		r.Deferred(50*time.Millisecond, func() { ext.Success() })
	}, func(as *engine.Steps, code string) { log.add("second handler %s", code) })
	p := root.Promise()
	r.RunUntilIdle()
	r.Advance(49 * time.Millisecond)
	if isDone(p) {
		_, err := p.Wait()
		t.Fatalf("ended early: %v (%q)", err, log.lines)
	}
	r.Advance(time.Millisecond)
	_, err := waitDone(t, p)
	wantNoErr(t, err)
	log.check(t, "second got 1")
}

func TestNestedTimeouts(t *testing.T) {
	t.Run("innerFirst", func(t *testing.T) {
		r := reactor.NewManual()
		var log logger
		start := r.Now()
		at := func() time.Duration { return r.Now().Sub(start) }
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			as.SetTimeout(100 * time.Millisecond)
			as.Add(func(as *engine.Steps) {
				as.SetTimeout(10 * time.Millisecond)
			}, func(as *engine.Steps, code string) {
				log.add("inner %s at %v", code, at())
				as.Success()
			})
			as.Add(func(as *engine.Steps) { as.WaitExternal() })
		}, func(as *engine.Steps, code string) { log.add("outer %s at %v", code, at()) })
		p := root.Promise()
		r.RunUntilIdle()
		r.Advance(200 * time.Millisecond)
		_, err := waitDone(t, p)
		wantCode(t, err, engine.Timeout)
		log.check(t, "inner Timeout at 10ms", "outer Timeout at 100ms")
	})
	t.Run("outerFirst", func(t *testing.T) {
		r := reactor.NewManual()
		var log logger
		start := r.Now()
		at := func() time.Duration { return r.Now().Sub(start) }
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			as.SetTimeout(10 * time.Millisecond)
			as.Add(func(as *engine.Steps) {
				as.SetTimeout(100 * time.Millisecond)
			}, func(as *engine.Steps, code string) { log.add("inner %s at %v", code, at()) })
		}, func(as *engine.Steps, code string) {
			log.add("outer %s at %v", code, at())
			as.Success()
		})
		root.Add(func(as *engine.Steps) { as.WaitExternal() }) // keeps the flow alive past 100ms
		p := root.Promise()
		r.RunUntilIdle()
		r.Advance(300 * time.Millisecond)
		if isDone(p) {
			_, err := p.Wait()
			t.Fatalf("flow ended: %v (%q)", err, log.lines)
		}
		log.check(t, "outer Timeout at 10ms")
		root.Cancel()
		r.RunUntilIdle()
		_, err := waitDone(t, p)
		wantCode(t, err, engine.Canceled)
	})
}

func TestTimeoutCancelsParallelBranches(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.SetTimeout(20 * time.Millisecond)
		as.Parallel(func(as *engine.Steps, code string) { log.add("parallel handler") }).
			Add(func(as *engine.Steps) {
				as.Add(func(as *engine.Steps) {
					as.SetCancel(func(*engine.Steps) { log.add("cancel b1 inner") })
				}, func(as *engine.Steps, code string) { log.add("b1 inner handler") })
			}).
			Add(func(as *engine.Steps) {
				as.SetCancel(func(*engine.Steps) { log.add("cancel b2") })
			}, func(as *engine.Steps, code string) { log.add("b2 handler") })
	}, func(as *engine.Steps, code string) { log.add("handler %s", code) })
	p := root.Promise()
	r.RunUntilIdle()
	r.Advance(20 * time.Millisecond)
	_, err := waitDone(t, p)
	wantCode(t, err, engine.Timeout)
	l := log.lines
	if len(l) != 3 || l[2] != "handler Timeout" || indexOf(l, "cancel b1 inner") < 0 || indexOf(l, "cancel b2") < 0 {
		t.Fatalf("log %q: want both branches' cancel handlers, then only the timed-out step's handler", l)
	}
}

// A Cancel that reaches the loop before the start of an Execute made off
// the loop cancels that run: its step never runs, and a later run is clean.
func TestCancelBeforeStartCancelsThatRun(t *testing.T) {
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
	if st := engine.StatsOf(r); st.FramesLive != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// Execute off the loop, Cancel from other goroutines, Release: no hang, no leak.
func TestExecuteCancelReleaseFromOtherGoroutines(t *testing.T) {
	r, _ := reactortest.StartRun(t, reactor.Options{CPU: -1, RingSize: 8})
	defer r.Close()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				root := engine.New(r)
				root.Add(func(as *engine.Steps) {
					as.SetCancel(func(*engine.Steps) {})
					as.SetTimeout(time.Millisecond)
				}, func(as *engine.Steps, code string) {})
				p := root.Promise()
				c := make(chan struct{})
				go func() { root.Cancel(); close(c) }()
				if i%3 == 0 {
					root.Cancel()
				}
				select {
				case <-p.Done():
				case <-time.After(5 * time.Second):
					t.Error("hang")
					return
				}
				<-c
				if i%2 == 0 {
					root.Add(func(*engine.Steps) {})
					p2 := root.Promise()
					root.Cancel()
					<-p2.Done()
				}
				root.Release()
			}
		}()
	}
	wg.Wait()
	st := make(chan engine.Stats)
	r.Immediate(func() { st <- engine.StatsOf(r) })
	s := <-st
	if s.FramesLive != 0 || s.RootsLive != 0 || s.FlowsLive != 0 {
		t.Fatalf("%+v", s)
	}
}
