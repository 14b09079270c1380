package engine_test

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A loop iteration keeps the frames of its ended sub-steps for the next
// iteration's Add: whatever ends the loop (Break, Continue then Break, an
// error, a cancel, a timeout, a count run out), every kept frame is given
// back, and a stale External of an earlier iteration completes nothing.
func TestLoopKeptFramesReleasedAtEveryEnd(t *testing.T) {
	ends := []struct {
		name string
		// body is the loop's body for iteration i; it adds its steps. x is
		// where a parked step leaves its External.
		body func(as *engine.Steps, i int, x *engine.External)
		end  func(r *reactor.Reactor, root *engine.Steps, x engine.External)
		want string // the root's outcome: "" for success, an error code, "running" when neither handler ran
	}{
		{"Break", func(as *engine.Steps, i int, x *engine.External) {
			as.Add(func(as *engine.Steps) { *x = as.External() })
			as.Add(func(as *engine.Steps) {
				if i == 5 {
					as.Break()
				}
			})
		}, nil, ""},
		{"Continue", func(as *engine.Steps, i int, x *engine.External) {
			as.Add(func(as *engine.Steps) { *x = as.External() })
			as.Add(func(as *engine.Steps) {
				if i%2 == 0 {
					as.Continue()
				}
				if i == 5 {
					as.Break()
				}
			})
			as.Add(func(as *engine.Steps) {})
		}, nil, ""},
		{"error", func(as *engine.Steps, i int, x *engine.External) {
			as.Add(func(as *engine.Steps) { *x = as.External() })
			as.Add(func(as *engine.Steps) {
				if i == 5 {
					as.Error("Boom")
				}
			})
		}, nil, "Boom"},
		{"cancel", func(as *engine.Steps, i int, x *engine.External) {
			as.Add(func(as *engine.Steps) { *x = as.External() })
			as.Add(func(as *engine.Steps) {})
		}, func(r *reactor.Reactor, root *engine.Steps, x engine.External) { root.Cancel() }, "running"}, // no error handler runs
		{"timeout", func(as *engine.Steps, i int, x *engine.External) {
			as.Add(func(as *engine.Steps) { *x = as.External() })
			as.Add(func(as *engine.Steps) {})
		}, func(r *reactor.Reactor, root *engine.Steps, x engine.External) { r.Advance(2 * time.Second) }, engine.Timeout},
		{"error in the parked step", func(as *engine.Steps, i int, x *engine.External) {
			as.Add(func(as *engine.Steps) { *x = as.External() })
			as.Add(func(as *engine.Steps) {})
		}, func(r *reactor.Reactor, root *engine.Steps, x engine.External) { x.Error("Late") }, "Late"},
	}
	for _, tt := range ends {
		t.Run(tt.name, func(t *testing.T) {
			r := reactor.NewManual()
			root := engine.New(r)
			var x, stale engine.External
			i := 0
			outcome := "running"
			root.Add(func(as *engine.Steps) {
				if tt.name == "timeout" {
					as.SetTimeout(time.Second)
				}
				as.Loop(func(as *engine.Steps) {
					tt.body(as, i, &x)
					i++
				})
			}, func(as *engine.Steps, code string) { outcome = code })
			root.Add(func(as *engine.Steps) { outcome = "" })
			root.Execute()
			r.RunUntilIdle()
			for k := 0; k < 6 && outcome == "running"; k++ {
				if k == 1 {
					stale = x
				}
				if k == 3 && tt.end != nil {
					break
				}
				if !x.Success(engine.Int(int64(k))) {
					t.Fatalf("iteration %d: its External did not complete it", k)
				}
				r.RunUntilIdle()
				if k >= 1 && stale.Success() {
					t.Fatalf("iteration %d: the External of iteration 1 completed a later step", k)
				}
			}
			if tt.end != nil {
				tt.end(r, root, x)
				r.RunUntilIdle()
			}
			if outcome != tt.want {
				t.Fatalf("outcome %q, want %q", outcome, tt.want)
			}
			if st := engine.StatsOf(r); st.FramesLive != 0 {
				t.Fatalf("FramesLive %d after the loop ended, want 0", st.FramesLive)
			}
			root.Release()
		})
	}
}

// The frames an iteration keeps never outnumber the sub-steps one
// iteration added, however the bodies vary: Add, Add with an error
// handler, AddWith (whose frame is not kept), a nested loop.
func TestLoopKeptFramesBounded(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	var live []int
	v := 7
	root.Loop(func(as *engine.Steps) {
		i := len(live)
		live = append(live, engine.StatsOf(r).FramesLive)
		if i == 40 {
			as.Break()
			return
		}
		for k := 0; k < i%4; k++ {
			switch (i + k) % 4 {
			case 0:
				as.Add(func(as *engine.Steps) {})
			case 1:
				as.Add(func(as *engine.Steps) {}, func(as *engine.Steps, code string) {})
			case 2:
				engine.AddWith(as, func(as *engine.Steps, v *int) {}, &v)
			case 3:
				as.Repeat(2, func(as *engine.Steps, i int) { as.Add(func(as *engine.Steps) {}) })
			}
		}
	})
	root.Execute()
	r.RunUntilIdle()
	if len(live) != 41 {
		t.Fatalf("%d iterations ran, want 41", len(live))
	}
	// At an iteration's start: the loop, the iteration and at most the
	// three sub-steps the largest iteration added.
	for i, n := range live {
		if n > 2+3 {
			t.Fatalf("iteration %d started with %d live frames, want at most 5: %v", i, n, live)
		}
	}
	if st := engine.StatsOf(r); st.FramesLive != 0 {
		t.Fatalf("FramesLive %d after the loop ended, want 0", st.FramesLive)
	}
	root.Release()
}

// A step Add made (flagged bare: nothing but its fn) that then sets a
// cancel or finally handler is not kept by its iteration with that
// handler: the next iteration's step, which sets none, must not run it.
// Iteration 0's step sets the handler, parks and is completed; iteration
// 1's step fails, which would run a cancel handler left on its frame.
func TestLoopKeptFrameDropsItsHandlers(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  func(as *engine.Steps, h engine.CancelFunc)
		want int // runs of the handler: a finally handler runs at iteration 0's success
	}{
		{"SetCancel", func(as *engine.Steps, h engine.CancelFunc) { as.SetCancel(h) }, 0},
		{"SetFinally", func(as *engine.Steps, h engine.CancelFunc) { as.SetFinally(h) }, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := reactor.NewManual()
			root := engine.New(r)
			runs, i := 0, 0
			outcome := "running"
			var x engine.External
			h := func(as *engine.Steps) { runs++ }
			root.Add(func(as *engine.Steps) {
				as.Loop(func(as *engine.Steps) {
					k := i
					i++
					as.Add(func(as *engine.Steps) {
						if k == 0 {
							tt.set(as, h)
							x = as.External()
							return
						}
						as.Error("Boom")
					})
				})
			}, func(as *engine.Steps, code string) { outcome = code })
			root.Execute()
			r.RunUntilIdle()
			if !x.Success() {
				t.Fatal("iteration 0's External did not complete its step")
			}
			r.RunUntilIdle()
			if outcome != "Boom" || i != 2 {
				t.Fatalf("outcome %q after %d iterations, want Boom after 2", outcome, i)
			}
			if runs != tt.want {
				t.Fatalf("the handler of iteration 0's step ran %d times, want %d", runs, tt.want)
			}
			if st := engine.StatsOf(r); st.FramesLive != 0 {
				t.Fatalf("FramesLive %d after the loop ended, want 0", st.FramesLive)
			}
			root.Release()
		})
	}
}

// A frame an iteration kept from a plain step may come back as a step of
// another kind (Parallel, SuccessStep, a nested loop) in the next
// iteration, with the plain step's callback still in it: each kind still
// runs as itself, values pass, and every frame is given back at the end,
// also for a loop that runs inside a parallel branch (its flow ends with
// the branch).
func TestLoopKeptFrameReusedAsOtherKinds(t *testing.T) {
	for _, inBranch := range []bool{false, true} {
		r := reactor.NewManual()
		root := engine.New(r)
		var got []int64
		plain := 0
		iter := 0
		body := func(as *engine.Steps) {
			i := iter
			iter++
			if i == 16 {
				as.Break()
				return
			}
			switch i % 4 {
			case 0: // plain steps, kept for the next iteration
				as.Add(func(as *engine.Steps) { plain++ })
				as.Add(func(as *engine.Steps) { plain++ })
				as.Add(func(as *engine.Steps) { plain++ })
			case 1: // a parallel and a SuccessStep from the kept frames
				p := as.Parallel()
				p.Add(func(as *engine.Steps) {})
				p.Add(func(as *engine.Steps) {})
				as.SuccessStep(engine.Int(int64(i)))
				as.Add(func(as *engine.Steps) { got = append(got, as.Args().At(0).Int()) })
			case 2: // a nested loop from a kept frame
				as.Repeat(2, func(as *engine.Steps, k int) {
					as.Add(func(as *engine.Steps) { got = append(got, int64(100*i+k)) })
				})
			case 3:
				as.Add(func(as *engine.Steps) { as.Success(engine.Int(int64(i))) })
				as.Add(func(as *engine.Steps) { got = append(got, as.Args().At(0).Int()) })
			}
		}
		if inBranch {
			p := root.Parallel()
			p.Loop(body)
			p.Add(func(as *engine.Steps) {})
		} else {
			root.Loop(body)
		}
		outcome := "running"
		root.Add(func(as *engine.Steps) { outcome = "" })
		root.Execute()
		r.RunUntilIdle()
		if outcome != "" {
			t.Fatalf("inBranch=%v: outcome %q", inBranch, outcome)
		}
		want := []int64{1, 200, 201, 3, 5, 600, 601, 7, 9, 1000, 1001, 11, 13, 1400, 1401, 15}
		if len(got) != len(want) {
			t.Fatalf("inBranch=%v: got %v, want %v", inBranch, got, want)
		}
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("inBranch=%v: got %v, want %v", inBranch, got, want)
			}
		}
		if plain != 12 {
			t.Fatalf("inBranch=%v: %d plain steps ran, want 12", inBranch, plain)
		}
		if st := engine.StatsOf(r); st.FramesLive != 0 || st.FlowsLive != 0 {
			t.Fatalf("inBranch=%v: FramesLive %d FlowsLive %d after the end, want 0", inBranch, st.FramesLive, st.FlowsLive)
		}
		root.Release()
	}
}
