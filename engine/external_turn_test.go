package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// An External completed on its own loop (a driver flow's step, as in issue
// 24's ParallelWaitLoop) queues the waiting step's flow; what happens
// between that Success and the flow's next turn must stay exact: a Cancel
// asked then wins (the step's cancel handler runs if it has one), a timeout
// of an enclosing step that fires then wins (Timeout reaches its error
// handler, the next sub-step never runs), and with nothing between, the
// value reaches the next sub-step, iteration after iteration. Each kind of
// waiting step is a sub-step of a loop iteration followed by a consume
// step, or the iteration's last sub-step: plain (Add's bare frame), with a
// cancel handler, with Stack memory, with a timeout of its own, with an
// error handler. Every iteration starts with kept frames that hold
// nothing, and every case ends with no frame live.
func TestExternalOnLoopBeforeTheTurn(t *testing.T) {
	type park struct {
		name string
		add  func(body *Steps, p ExecFunc, log *[]string)
		prep func(as *Steps, log *[]string) // in the waiting step, before External
	}
	parks := []park{
		{"plain", func(b *Steps, p ExecFunc, _ *[]string) { b.Add(p) }, nil},
		{"SetCancel", func(b *Steps, p ExecFunc, _ *[]string) { b.Add(p) }, func(as *Steps, log *[]string) {
			as.SetCancel(func(*Steps) { *log = append(*log, "park canceled") })
		}},
		{"Stack", func(b *Steps, p ExecFunc, _ *[]string) { b.Add(p) }, func(as *Steps, _ *[]string) { *Stack[int](as) = 7 }},
		{"own timeout", func(b *Steps, p ExecFunc, _ *[]string) { b.Add(p) }, func(as *Steps, _ *[]string) { as.SetTimeout(time.Hour) }},
		{"error handler", func(b *Steps, p ExecFunc, log *[]string) {
			b.Add(p, func(_ *Steps, code string) { *log = append(*log, "park handler "+code) })
		}, nil},
	}
	events := []string{"none", "cancel", "timeout", "error"}
	for _, pk := range parks {
		for _, last := range []bool{false, true} {
			for _, ev := range events {
				name := fmt.Sprintf("%s/last=%v/%s", pk.name, last, ev)
				t.Run(name, func(t *testing.T) {
					r := reactor.NewManual()
					e := engineOf(r)
					var log []string
					var wait External
					iters := 0
					parkFn := func(as *Steps) {
						if pk.prep != nil {
							pk.prep(as, &log)
						}
						wait = as.External()
					}
					consume := func(as *Steps) { log = append(log, fmt.Sprintf("consume %d", as.Arg(0).Int())) }
					body := func(as *Steps) {
						// What the last iteration kept must hold
						// nothing (keep's invariant): a step that
						// ended holding a handler, memory or a timer
						// is released, not kept.
						for c := as.next; c != nil; c = c.next {
							if c.st != stFree || c.flags != 0 || c.oncancel != nil || c.onerr != nil ||
								!c.scope.Empty() || c.timed() || c.qlast != nil || c.ctl.Load()&xMask != xNone {
								t.Errorf("iteration %d: a kept frame holds st %d flags %#x cancel %v error handler %v memory %v timer %v",
									iters, c.st, c.flags, c.oncancel != nil, c.onerr != nil, !c.scope.Empty(), c.timed())
							}
						}
						iters++
						pk.add(as, parkFn, &log)
						if !last {
							as.Add(consume)
						}
					}
					const limit = 10 * time.Millisecond
					fired := false
					root := New(r)
					root.Add(func(as *Steps) {
						if ev == "timeout" {
							// A timer due with the step's timeout and
							// armed just before it completes the waiting
							// step first (after the first completion
							// below); the timeout fires in the same pass,
							// before the flow's turn.
							r.Deferred(limit, func() {
								fired = true
								if !wait.Success(Int(2)) {
									t.Errorf("the waiting step had already ended when the earlier timer fired")
								}
							})
							as.SetTimeout(limit)
						}
						as.Loop(body)
					}, func(_ *Steps, code string) { log = append(log, "outer handler "+code) })
					var end string
					X.OnEnd(root, func(_ *Steps, c string) { end = "end " + c })
					root.Execute()
					r.RunUntilIdle()
					if iters != 1 || wait.f == nil {
						t.Fatalf("%d iterations ran, want 1 parked", iters)
					}
					// One completion with nothing between it and the
					// turn: the value reaches the consume step (or ends
					// the iteration) and the loop parks again.
					complete := func(v int64, then func()) {
						d := New(r)
						d.Add(func(*Steps) {
							if !wait.Success(Int(v)) {
								t.Errorf("Success(%d) of a waiting step reported false", v)
							}
							if wait.Success(Int(v)) {
								t.Errorf("a second Success(%d) reported true", v)
							}
							if then != nil {
								then()
							}
						})
						d.Execute()
						r.RunUntilIdle()
						d.Release()
					}
					complete(1, nil)
					if iters != 2 {
						t.Fatalf("after the first completion %d iterations ran, want 2", iters)
					}
					log = append(log, "|")
					switch ev {
					case "none":
						complete(2, nil)
						root.Cancel()
						r.RunUntilIdle()
					case "cancel":
						complete(2, func() { root.Cancel() })
					case "timeout":
						r.Advance(limit)
						if !fired {
							t.Fatal("the completing timer never fired")
						}
					case "error":
						d := New(r)
						d.Add(func(*Steps) {
							if !wait.Error("Broken", "from the driver") {
								t.Error("Error of a waiting step reported false")
							}
						})
						d.Execute()
						r.RunUntilIdle()
						d.Release()
						root.Cancel()
						r.RunUntilIdle()
					}
					log = append(log, end)
					got := fmt.Sprint(log)
					want := expectTurn(pk.name, last, ev)
					if got != want {
						t.Fatalf("ran %s\nwant %s", got, want)
					}
					root.Release()
					r.RunUntilIdle()
					if e.stats.FramesLive != 0 {
						t.Fatalf("%d frames live after the root ended", e.stats.FramesLive)
					}
				})
			}
		}
	}
}

// expectTurn is what TestExternalOnLoopBeforeTheTurn's flow must have run:
// the first completion's consume, then per event.
func expectTurn(park string, last bool, ev string) string {
	var log []string
	if !last {
		log = append(log, "consume 1")
	}
	log = append(log, "|")
	canceledPark := park == "SetCancel"
	switch ev {
	case "none":
		// The second value is consumed, the loop parks again, the
		// cancel then finds the third iteration's waiting step.
		if !last {
			log = append(log, "consume 2")
		}
		if canceledPark {
			log = append(log, "park canceled")
		}
		log = append(log, "end "+Canceled)
	case "cancel":
		// The Cancel asked after the Success and before the turn wins:
		// the waiting step's cancel handler runs, nothing else.
		if canceledPark {
			log = append(log, "park canceled")
		}
		log = append(log, "end "+Canceled)
	case "timeout":
		// The outer step's timeout, due before the turn, wins: the
		// completed step is canceled (its handler runs), and Timeout
		// reaches the outer step's error handler only; the root then
		// ends plainly (the handler neither succeeds nor fails: the
		// error stands).
		if canceledPark {
			log = append(log, "park canceled")
		}
		log = append(log, "outer handler "+Timeout, "end "+Timeout)
	case "error":
		if park == "error handler" {
			log = append(log, "park handler Broken")
		}
		if canceledPark {
			log = append(log, "park canceled")
		}
		log = append(log, "outer handler Broken", "end Broken")
	}
	return fmt.Sprint(log)
}
