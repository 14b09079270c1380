package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// An External completed on its own loop (a driver flow's step, as in the
// ParallelWaitLoop row) queues the waiting step's flow; what happens
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

// The turn that follows a completed External on a bare sub-step of a loop
// iteration skips advance (run's actDone case): the iteration keeps the
// frame and its next sub-step runs, or, with none left, advance goes on
// from the iteration. These cases reach that path from the states advance
// decides in its later rounds (loop counts, labels, a finally handler on
// the iteration, parallel branches whose top is a loop or a step), with
// the completion made on the loop (a driver flow) or off it (the test's
// goroutine), and a stale handle of the reused frame used after the next
// iteration took the frame again.
func TestExternalCompletedSubStepTurn(t *testing.T) {
	type rig struct {
		r     *reactor.Reactor
		log   []string
		waits map[string]External
	}
	park := func(c *rig, name string) ExecFunc {
		return func(as *Steps) { c.waits[name] = as.External() }
	}
	consume := func(c *rig, name string, then func(as *Steps, v int64)) ExecFunc {
		return func(as *Steps) {
			v := as.Arg(0).Int()
			c.log = append(c.log, fmt.Sprintf("%s%d", name, v))
			if then != nil {
				then(as, v)
			}
		}
	}
	// onLoop completes name's External from a driver flow on the loop;
	// offLoop from the test's goroutine, which is not the loop's.
	complete := func(t *testing.T, c *rig, name string, v int64, onLoop bool) {
		t.Helper()
		x, ok := c.waits[name]
		if !ok {
			t.Fatalf("%s is not waiting", name)
		}
		delete(c.waits, name)
		if onLoop {
			d := New(c.r)
			var got bool
			d.Add(func(*Steps) { got = x.Success(Int(v)) })
			d.Execute()
			c.r.RunUntilIdle()
			d.Release()
			if !got {
				t.Fatalf("Success(%d) of %s reported false", v, name)
			}
		} else {
			if !x.Success(Int(v)) {
				t.Fatalf("Success(%d) of %s reported false", v, name)
			}
		}
		c.r.RunUntilIdle()
	}
	type step struct {
		name   string
		v      int64
		onLoop bool
	}
	cases := []struct {
		name  string
		build func(c *rig, root *Steps)
		steps []step
		want  string
	}{
		{
			// Repeat's count decides after an iteration whose last
			// sub-step waited (advance from the iteration), and in an
			// iteration with a consume step.
			name: "Repeat, last sub-step waits in iteration 1",
			build: func(c *rig, root *Steps) {
				root.Add(func(as *Steps) {
					as.Repeat(3, func(it *Steps, i int) {
						it.Add(park(c, "w"))
						if i != 1 {
							it.Add(consume(c, "c", nil))
						}
					})
				})
				root.Add(func(*Steps) { c.log = append(c.log, "after") })
			},
			steps: []step{{"w", 1, true}, {"w", 2, false}, {"w", 3, true}},
			want:  "[c1 c3 after end]",
		},
		{
			// Continue and Break of an outer labelled loop from the
			// sub-step that follows the completed one, and the inner
			// Repeat's end running the outer body's next sub-step.
			name: "labels",
			build: func(c *rig, root *Steps) {
				root.Add(func(as *Steps) {
					as.Loop(func(o *Steps) {
						o.Repeat(2, func(it *Steps, i int) {
							it.Add(park(c, "w"))
							it.Add(consume(c, "c", func(s *Steps, v int64) {
								switch v {
								case 10:
									s.Continue("outer")
								case 20:
									s.Break("outer")
								}
							}))
						})
						o.Add(func(*Steps) { c.log = append(c.log, "tail") })
					}, "outer")
				})
				root.Add(func(*Steps) { c.log = append(c.log, "after") })
			},
			steps: []step{{"w", 1, true}, {"w", 2, false}, {"w", 10, true}, {"w", 3, false}, {"w", 20, true}},
			want:  "[c1 c2 tail c10 c3 c20 after end]",
		},
		{
			// A finally handler on the iteration: the completed sub-step
			// was its last, so advance runs the handler from the
			// iteration.
			name: "finally on the iteration",
			build: func(c *rig, root *Steps) {
				root.Add(func(as *Steps) {
					as.Repeat(2, func(it *Steps, i int) {
						it.SetFinally(func(*Steps) { c.log = append(c.log, fmt.Sprintf("finally%d", i)) })
						it.Add(park(c, "w"))
					})
				})
			},
			steps: []step{{"w", 1, true}, {"w", 2, false}},
			want:  "[finally0 finally1 end]",
		},
		{
			// Parallel branches: one whose top is a loop (Repeat on the
			// Parallel accessor), one whose top is a step running a
			// loop; completions interleaved, on and off the loop.
			name: "parallel",
			build: func(c *rig, root *Steps) {
				root.Add(func(as *Steps) {
					p := as.Parallel()
					p.Repeat(2, func(it *Steps, i int) {
						it.Add(park(c, "a"))
						it.Add(consume(c, "a", nil))
					})
					p.Add(func(b *Steps) {
						b.Loop(func(it *Steps) {
							it.Add(park(c, "b"))
							it.Add(consume(c, "b", func(s *Steps, v int64) {
								if v == 2 {
									s.Break()
								}
							}))
						})
					})
				})
				root.Add(func(*Steps) { c.log = append(c.log, "after") })
			},
			steps: []step{{"a", 1, true}, {"b", 1, false}, {"b", 2, true}, {"a", 2, false}},
			want:  "[a1 b1 b2 a2 after end]",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &rig{r: reactor.NewManual(), waits: map[string]External{}}
			e := engineOf(c.r)
			root := New(c.r)
			tc.build(c, root)
			X.OnEnd(root, func(_ *Steps, code string) { c.log = append(c.log, "end"+code) })
			root.Execute()
			c.r.RunUntilIdle()
			for _, s := range tc.steps {
				complete(t, c, s.name, s.v, s.onLoop)
			}
			if len(c.waits) != 0 {
				t.Errorf("still waiting: %v", c.waits)
			}
			if got := fmt.Sprint(c.log); got != tc.want {
				t.Errorf("ran %s\nwant %s", got, tc.want)
			}
			root.Release()
			c.r.RunUntilIdle()
			if e.stats.FramesLive != 0 {
				t.Errorf("%d frames live after the root ended", e.stats.FramesLive)
			}
		})
	}
}

// A frame the iteration kept after its External completed is taken again
// by the next iteration (as its waiting step when that was the iteration's
// only sub-step, else as its consume step): the first handle must stay
// stale (its Success and Error report false and reach no step), on and off
// the loop.
func TestExternalStaleHandleOfAReusedFrame(t *testing.T) {
	for _, onLoop := range []bool{true, false} {
		for _, alone := range []bool{true, false} {
			t.Run(fmt.Sprintf("onLoop=%v/alone=%v", onLoop, alone), func(t *testing.T) {
				r := reactor.NewManual()
				var waits []External
				var log []string
				root := New(r)
				root.Add(func(as *Steps) {
					as.Repeat(2, func(it *Steps, i int) {
						it.Add(func(s *Steps) { waits = append(waits, s.External()) })
						if !alone {
							it.Add(func(s *Steps) { log = append(log, fmt.Sprint(s.Arg(0).Int())) })
						}
					})
				})
				X.OnEnd(root, func(_ *Steps, code string) { log = append(log, "end"+code) })
				root.Execute()
				r.RunUntilIdle()
				call := func(fn func() bool) bool {
					if !onLoop {
						return fn()
					}
					var got bool
					d := New(r)
					d.Add(func(*Steps) { got = fn() })
					d.Execute()
					r.RunUntilIdle()
					d.Release()
					return got
				}
				if len(waits) != 1 || !call(func() bool { return waits[0].Success(Int(1)) }) {
					t.Fatalf("first wait: %d handles, or its Success reported false", len(waits))
				}
				r.RunUntilIdle()
				if len(waits) != 2 {
					t.Fatalf("%d handles after the first completion, want 2", len(waits))
				}
				// The case needs the first waiting frame live again
				// in the second iteration.
				if old := waits[0].f; old.st == stFree || old.parent != waits[1].f.parent || alone && old != waits[1].f {
					t.Fatalf("the first waiting frame was not taken again by the next iteration (st %d)", old.st)
				}
				if call(func() bool { return waits[0].Success(Int(99)) }) {
					t.Error("a stale handle's Success reported true")
				}
				if call(func() bool { return waits[0].Error("Stale") }) {
					t.Error("a stale handle's Error reported true")
				}
				r.RunUntilIdle()
				if !call(func() bool { return waits[1].Success(Int(3)) }) {
					t.Fatal("the live handle's Success reported false")
				}
				r.RunUntilIdle()
				want := "[1 3 end]"
				if alone {
					want = "[end]"
				}
				if got := fmt.Sprint(log); got != want {
					t.Errorf("ran %s, want %s", got, want)
				}
				releaseLeavesNoFrame(t, root, r)
			})
		}
	}
}

// The hot goroutine checks (Add, External, Arg; 88f104a reads the goroutine
// first) still refuse a running step's accessor used from another
// goroutine while the step runs: in a loop iteration (Add's fast path: the
// accessor is e.cur and not a root) and in its sub-step, the call is
// dropped, External's handle is not valid, and the flow goes on.
func TestOffLoopChecksOnARunningIteration(t *testing.T) {
	for _, op := range []string{"Add", "External", "Arg"} {
		for _, inSub := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sub=%v", op, inSub), func(t *testing.T) {
				r := reactor.NewManual()
				var log []string
				offLoop := func(as *Steps) {
					done := make(chan string)
					go func() {
						switch op {
						case "Add":
							as.Add(func(*Steps) { log = append(log, "added step ran") })
							done <- "Add returned"
						case "External":
							x := as.External()
							done <- fmt.Sprintf("External valid %v", x.Valid())
						case "Arg":
							done <- fmt.Sprintf("Arg %d", as.Arg(0).Int())
						}
					}()
					log = append(log, <-done)
					if op == "Arg" {
						log = append(log, fmt.Sprintf("loop Arg %d", as.Arg(0).Int()))
					}
					if as.e.cur != as || !r.IsSameThread() {
						t.Error("the step is not running on the loop: the case is not reached")
					}
				}
				root := New(r)
				root.Add(func(as *Steps) { as.Success(Int(5)) })
				root.Add(func(as *Steps) {
					as.Repeat(2, func(it *Steps, i int) {
						if inSub {
							it.Add(func(s *Steps) { s.Success(Int(7)) })
							it.Add(offLoop)
						} else {
							offLoop(it)
						}
						it.Add(func(*Steps) { log = append(log, fmt.Sprint("step ", i)) })
					})
				})
				X.OnEnd(root, func(_ *Steps, code string) { log = append(log, "end"+code) })
				root.Execute()
				r.RunUntilIdle()
				var want string
				switch op {
				case "Add":
					want = "[Add returned step 0 Add returned step 1 end]"
				case "External":
					want = "[External valid false step 0 External valid false step 1 end]"
				case "Arg":
					// Off the loop Arg reads nothing (the zero Value);
					// on it, the sub-step's value (the iteration has
					// none).
					want = "[Arg 0 loop Arg 0 step 0 Arg 0 loop Arg 0 step 1 end]"
					if inSub {
						want = "[Arg 0 loop Arg 7 step 0 Arg 0 loop Arg 7 step 1 end]"
					}
				}
				if got := fmt.Sprint(log); got != want {
					t.Errorf("ran %s\nwant %s", got, want)
				}
				releaseLeavesNoFrame(t, root, r)
			})
		}
	}
}

// releaseLeavesNoFrame releases root, runs r until idle and checks that
// r's engine has no frame left live.
func releaseLeavesNoFrame(t *testing.T, root *Steps, r *reactor.Reactor) {
	t.Helper()
	root.Release()
	r.RunUntilIdle()
	if n := engineOf(r).stats.FramesLive; n != 0 {
		t.Errorf("%d frames live after the root ended", n)
	}
}
