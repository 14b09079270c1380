package engine_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
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

// Loops on a real reactor whose iterations park on an External that other
// goroutines complete (the loop parked: the finisher applies it under the
// borrowed word; the loop running: the mailbox), with each iteration's
// frames kept for the next: the previous iteration's External, tried
// again, completes nothing, every value arrives in order, and every frame
// is given back. Roots are executed from goroutines (the caller may run
// the parked loop's turn) and released off the loop, again and again.
func TestLoopKeptFramesExternalsFromGoroutinesReal(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	const flows, rounds, iters = 4, 30, 20
	var wg sync.WaitGroup
	errs := make(chan string, flows)
	for g := 0; g < flows; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			xs := make(chan engine.External, 1)
			for round := 0; round < rounds; round++ {
				root := engine.New(r)
				var sum int64
				i := 0
				root.Loop(func(as *engine.Steps) {
					if i == iters {
						as.Break()
						return
					}
					i++
					as.Add(func(as *engine.Steps) { xs <- as.External() })
					as.Add(func(as *engine.Steps) { sum += as.Args().At(0).Int() })
					as.Add(func(as *engine.Steps) {})
				})
				p := root.Promise()
				root.Execute()
				var prev engine.External
				for k := 1; k <= iters; k++ {
					var x engine.External
					select {
					case x = <-xs:
					case <-time.After(reactortest.Hang):
						errs <- fmt.Sprintf("flow %d round %d: iteration %d never parked", g, round, k)
						return
					}
					if k > 1 && prev.Success(engine.Int(1000)) {
						errs <- fmt.Sprintf("flow %d round %d: iteration %d's External completed iteration %d", g, round, k-1, k)
						return
					}
					if !x.Success(engine.Int(int64(k))) {
						errs <- fmt.Sprintf("flow %d round %d: iteration %d's External was refused", g, round, k)
						return
					}
					prev = x
				}
				if _, err := realWait(t, p, "loop"); err != nil {
					errs <- fmt.Sprintf("flow %d round %d: %v", g, round, err)
					return
				}
				if want := int64(iters * (iters + 1) / 2); sum != want {
					errs <- fmt.Sprintf("flow %d round %d: sum %d, want %d", g, round, sum, want)
					return
				}
				if prev.Success(engine.Int(1000)) {
					errs <- fmt.Sprintf("flow %d round %d: the last External completed again", g, round)
					return
				}
				root.Release()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	var st engine.Stats
	onRealLoop(t, r, func() { st = engine.StatsOf(r) })
	if st.FramesLive != 0 || st.FlowsLive != 0 || st.RootsLive != 0 {
		t.Fatalf("FramesLive %d FlowsLive %d RootsLive %d after every flow ended, want 0", st.FramesLive, st.FlowsLive, st.RootsLive)
	}
}

// Roots on a real reactor run a loop in two parallel branches, each
// iteration parked on an External, and are canceled from another goroutine
// (through a Ref, which must not reach the root's next owner) mid-loop,
// then released and made again from the loop's pool: every kept frame,
// branch and root is given back, a Ref of a released root cancels
// nothing, and no External of a canceled run completes anything.
func TestLoopCanceledInBranchesReusesRootsReal(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	const rounds = 60
	xs := make(chan engine.External, 4)
	var stale []engine.Ref
	var staleX []engine.External
	for round := 0; round < rounds; round++ {
		var root *engine.Steps
		var p *engine.Promise
		made := make(chan struct{})
		r.Immediate(func() { // New and Execute on the loop: the loop's ring of roots
			defer close(made)
			root = engine.New(r)
			par := root.Parallel()
			for b := 0; b < 2; b++ {
				par.Loop(func(as *engine.Steps) {
					as.Add(func(as *engine.Steps) { xs <- as.External() })
					as.Add(func(as *engine.Steps) {})
				})
			}
			p = root.Promise() // executes it
		})
		<-made
		ref := root.Ref()
		// A few iterations of each branch, then the cancel.
		for k := 0; k < 6; k++ {
			var x engine.External
			select {
			case x = <-xs:
			case <-time.After(reactortest.Hang):
				t.Fatalf("round %d: no branch parked", round)
			}
			if k < 4 {
				if !x.Success() {
					t.Fatalf("round %d: an External was refused", round)
				}
			} else {
				staleX = append(staleX, x)
			}
		}
		for _, old := range stale {
			if old.Cancel() {
				t.Fatalf("round %d: a Ref of a released root canceled a run", round)
			}
		}
		if !ref.Cancel() {
			t.Fatalf("round %d: the Ref of the running root did not cancel it", round)
		}
		if _, err := realWait(t, p, "canceled"); err == nil {
			t.Fatalf("round %d: a canceled root succeeded", round)
		}
		for _, x := range staleX {
			if x.Success() {
				t.Fatalf("round %d: an External of a canceled run completed", round)
			}
		}
		staleX = staleX[:0]
		// Drain what a branch parked after the cancel was asked.
		for len(xs) > 0 {
			if x := <-xs; x.Success() {
				t.Fatalf("round %d: an External of a canceled run completed", round)
			}
		}
		released := make(chan struct{})
		r.Immediate(func() { root.Release(); close(released) })
		<-released
		stale = append(stale, ref)
	}
	var st engine.Stats
	onRealLoop(t, r, func() { st = engine.StatsOf(r) })
	if st.FramesLive != 0 || st.FlowsLive != 0 || st.RootsLive != 0 {
		t.Fatalf("FramesLive %d FlowsLive %d RootsLive %d after every root was released, want 0", st.FramesLive, st.FlowsLive, st.RootsLive)
	}
}
