package engine_test

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// What a frame reused by a loop iteration (kept), by a root (spare) or
// through the free list may carry over, now that the frame is 128 bytes,
// a step Add makes is bare (fBare) and a parallel step has no counter.

// A step Add made (bare) that takes Stack memory or a timeout is not kept
// by its iteration with them: its Stack memory is given back when it ends
// (spec 1.14), and its timer, stopped then, never fails the step that gets
// the frame next. Iteration 0's step takes the extra, parks and is
// completed; iteration 1's step parks past the old timeout.
func TestBareStepExtrasEndWithIt(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  func(as *engine.Steps)
	}{
		{"Stack", func(as *engine.Steps) { engine.Stack[[4]int64](as)[0] = 1 }},
		{"SetTimeout", func(as *engine.Steps) { as.SetTimeout(10 * time.Millisecond) }},
		{"Stack and SetTimeout", func(as *engine.Steps) {
			engine.Stack[[4]int64](as)[0] = 1
			as.SetTimeout(10 * time.Millisecond)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := reactor.NewManual()
			root := engine.New(r)
			var x engine.External
			outcome, i := "running", 0
			var before, during int // arena objects in use at iteration 0's start and in iteration 1's step
			root.Add(func(as *engine.Steps) {
				as.Loop(func(as *engine.Steps) {
					k := i
					i++
					as.Add(func(as *engine.Steps) {
						switch k {
						case 0:
							before = engine.ArenaStats(r).ObjectsInUse
							tt.set(as)
						case 1:
							during = engine.ArenaStats(r).ObjectsInUse
						default:
							as.Break()
							return
						}
						x = as.External()
					})
				})
			}, func(as *engine.Steps, code string) { outcome = code })
			root.Execute()
			r.RunUntilIdle()
			if !x.Success() {
				t.Fatal("iteration 0's step is not parked")
			}
			r.RunUntilIdle()
			if i != 2 {
				t.Fatalf("%d iterations ran, want 2", i)
			}
			if during != before {
				t.Fatalf("arena objects in use: %d in iteration 1, %d before iteration 0's Stack: its memory outlived its step", during, before)
			}
			r.Advance(time.Second) // iteration 0's timeout, long past
			r.RunUntilIdle()
			if outcome != "running" {
				t.Fatalf("iteration 1's step ended with %q while parked: a stale timer", outcome)
			}
			if !x.Success() {
				t.Fatal("iteration 1's step is not parked")
			}
			r.RunUntilIdle()
			if outcome != "running" || i != 3 {
				t.Fatalf("outcome %q after %d iterations", outcome, i)
			}
			if st := engine.StatsOf(r); st.FramesLive != 0 {
				t.Fatalf("FramesLive %d after the root ended, want 0", st.FramesLive)
			}
			if n := engine.ArenaStats(r).ObjectsInUse; n != 0 {
				t.Fatalf("arena objects in use %d after the root ended, want 0", n)
			}
			root.Release()
		})
	}
}

// A frame that carried many timeouts (a root re-executed on its spares, a
// loop's iterations on the frames they give back), some fired and some
// stopped, is never failed by one of them: the timer's index and
// generation, kept apart in the frame, must still name only its own timer,
// and each must be stopped when its step ends. Each iteration's timed step
// A is completed in time; its frame, free again, is the next one taken
// (the free list is LIFO): by B, which A2 adds after A ended, and which
// parks with no timeout of its own (even iterations) while the clock runs
// past A's, or times out itself (odd ones), recovered by A2.
func TestTimeoutsOnReusedFrames(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	ms := time.Millisecond
	var x engine.External
	var codes []string // each Timeout A2 recovered, and the root's outcome if it fails
	want := 0
	for round := 0; round < 20; round++ {
		// A root's steps are spent by its run: added again, on its spares.
		root.Add(func(as *engine.Steps) {
			as.Repeat(8, func(as *engine.Steps, i int) {
				as.Add(func(as *engine.Steps) { // A
					as.SetTimeout(time.Duration(1+(round+i)%3) * ms)
					x = as.External()
				})
				as.Add(func(as *engine.Steps) { // A2
					as.Add(func(as *engine.Steps) { // B
						if i%2 == 1 {
							as.SetTimeout(ms)
						}
						x = as.External()
					})
				}, func(as *engine.Steps, code string) {
					codes = append(codes, code)
					as.Success()
				})
			})
		}, func(as *engine.Steps, code string) { codes = append(codes, "root:"+code) })
		root.Execute()
		for i := 0; i < 8; i++ {
			r.RunUntilIdle()
			if !x.Success() {
				t.Fatalf("round %d, iteration %d: A is not parked (%v)", round, i, codes)
			}
			r.RunUntilIdle()
			if i%2 == 1 {
				r.Advance(ms) // B's timeout; the next A's, set then, is later
				want++
			} else {
				r.Advance(5 * ms) // past A's timeout: B must not fail
			}
			r.RunUntilIdle()
			if len(codes) != want {
				t.Fatalf("round %d, iteration %d: outcomes %v, want %d Timeouts", round, i, codes, want)
			}
			if i%2 == 0 && !x.Success() {
				t.Fatalf("round %d, iteration %d: B is not parked (%v)", round, i, codes)
			}
		}
		r.Advance(10 * ms) // whatever timer a frame might still name
		r.RunUntilIdle()
		if len(codes) != want {
			t.Fatalf("round %d: outcomes %v after the root ended, want %d Timeouts", round, codes, want)
		}
	}
	for _, c := range codes {
		if c != engine.Timeout {
			t.Fatalf("outcomes %v, want Timeouts only", codes)
		}
	}
	if st := engine.StatsOf(r); st.FramesLive != 0 {
		t.Fatalf("FramesLive %d after the last run, want 0", st.FramesLive)
	}
	root.Release()
}

// A parallel step knows its running branches by its list alone: whatever
// order they end in, it completes once, after the last; a failing branch
// cancels each sibling still running exactly once and fails it once; the
// next iteration's parallel (on reused frames) starts with a list of its
// own. Branches are counted 1 to 4, completed first to last, last to first
// or middle first, and every fifth iteration one fails.
func TestParallelBranchListAcrossIterations(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	const iterations = 20
	var xs []engine.External
	var log []string
	cancels := 0
	outcome := "running"
	root.Add(func(as *engine.Steps) {
		as.Repeat(iterations, func(as *engine.Steps, i int) {
			xs = xs[:0]
			p := as.Parallel(func(as *engine.Steps, code string) {
				log = append(log, "failed:"+code)
				as.Success()
			})
			for b := 0; b < 1+i%4; b++ {
				p.Add(func(as *engine.Steps) {
					as.SetCancel(func(*engine.Steps) { cancels++ })
					xs = append(xs, as.External())
				})
			}
			as.Add(func(as *engine.Steps) { log = append(log, "after") })
		})
	}, func(as *engine.Steps, code string) { outcome = code })
	root.Execute()
	wantCancels := 0
	for i := 0; i < iterations; i++ {
		r.RunUntilIdle()
		n := 1 + i%4
		if len(xs) != n {
			t.Fatalf("iteration %d: %d branches parked, want %d", i, len(xs), n)
		}
		order := make([]int, 0, n)
		switch i % 3 {
		case 0:
			for b := 0; b < n; b++ {
				order = append(order, b)
			}
		case 1:
			for b := n - 1; b >= 0; b-- {
				order = append(order, b)
			}
		default:
			order = append(order, n/2)
			for b := 0; b < n; b++ {
				if b != n/2 {
					order = append(order, b)
				}
			}
		}
		log = log[:0]
		fail := i%5 == 4
		for k, b := range order {
			if fail && k == len(order)/2 {
				if !xs[b].Error("Boom") {
					t.Fatalf("iteration %d: branch %d not parked", i, b)
				}
				r.RunUntilIdle()
				wantCancels += len(order) - k // the failing branch's own cancel handler runs too (spec 1.3)
				break
			}
			if !xs[b].Success() {
				t.Fatalf("iteration %d: branch %d not parked", i, b)
			}
			r.RunUntilIdle()
			if k < len(order)-1 && len(log) != 0 {
				t.Fatalf("iteration %d: %v after %d of %d branches ended", i, log, k+1, n)
			}
		}
		want := "after"
		if fail {
			want = "failed:Boom after"
		}
		if got := join(log); got != want || cancels != wantCancels {
			t.Fatalf("iteration %d: %q with %d cancels, want %q with %d", i, got, cancels, want, wantCancels)
		}
	}
	r.RunUntilIdle()
	if outcome != "running" {
		t.Fatalf("root ended with %q", outcome)
	}
	if st := engine.StatsOf(r); st.FramesLive != 0 || st.FlowsLive != 0 {
		t.Fatalf("FramesLive %d, FlowsLive %d after the root ended, want 0", st.FramesLive, st.FlowsLive)
	}
	root.Release()
}

func join(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += " "
		}
		out += v
	}
	return out
}

// A started parallel step takes no more branches: a branch that adds one
// to it (through the accessor Parallel returned) fails with InternalError,
// as any misuse in a callback does, and the parallel step, whose list
// holds exactly the branches that run, fails once with its siblings
// canceled, leaving no flow or frame behind.
func TestParallelStartedTakesNoBranch(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	outcome, cancels, extra := "running", 0, 0
	root.Add(func(as *engine.Steps) {
		p := as.Parallel()
		p.Add(func(as *engine.Steps) {
			as.SetCancel(func(*engine.Steps) { cancels++ })
			as.External()
		})
		p.Add(func(as *engine.Steps) {
			p.Add(func(as *engine.Steps) { extra++ })
		})
	}, func(as *engine.Steps, code string) { outcome = code })
	root.Execute()
	r.RunUntilIdle()
	if outcome != engine.InternalError || cancels != 1 || extra != 0 {
		t.Fatalf("outcome %q, %d cancels, the added branch ran %d times; want InternalError, 1, 0", outcome, cancels, extra)
	}
	if st := engine.StatsOf(r); st.FramesLive != 0 || st.FlowsLive != 0 {
		t.Fatalf("FramesLive %d, FlowsLive %d after the root ended, want 0", st.FramesLive, st.FlowsLive)
	}
	root.Release()
}

// A root-level step Add takes from the root's spare frames is bare too
// (a pooled root run again, off the loop or on it): one that takes Stack
// memory, a cancel handler or a finally handler is not given back to the
// spares with them. Each run's step takes the extra and ends; the next
// run's step gets the same frame (spares are LIFO) and must find none of
// it: the Stack memory back in the arena, no handler run twice.
func TestBareRootStepExtrasEndWithIt(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  func(as *engine.Steps, ran *int)
	}{
		{"Stack", func(as *engine.Steps, _ *int) { engine.Stack[[4]int64](as)[0] = 1 }},
		{"SetCancel", func(as *engine.Steps, ran *int) {
			as.SetCancel(func(*engine.Steps) { *ran++ })
			as.Success() // a cancel handler disables implicit success
		}},
		{"SetFinally", func(as *engine.Steps, ran *int) { as.SetFinally(func(*engine.Steps) { *ran++ }) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := reactor.NewManual()
			root := engine.New(r)
			ran, plain := 0, 0
			for run := range 4 {
				if run%2 == 0 {
					root.Add(func(as *engine.Steps) { tt.set(as, &ran) })
				} else {
					root.Add(func(*engine.Steps) { plain++ })
				}
				p := root.Promise()
				r.RunUntilIdle()
				if _, err := p.Wait(); err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
				if n := engine.ArenaStats(r).ObjectsInUse; n != 0 {
					t.Fatalf("run %d: arena objects in use %d after the root ended, want 0", run, n)
				}
			}
			want := 0
			if tt.name == "SetFinally" {
				want = 2 // once per run that set it, on its success
			}
			if ran != want || plain != 2 {
				t.Fatalf("handlers ran %d times (want %d), plain steps %d (want 2)", ran, want, plain)
			}
			if st := engine.StatsOf(r); st.FramesLive != 0 {
				t.Fatalf("FramesLive %d after the root ended, want 0", st.FramesLive)
			}
			root.Release()
		})
	}
}
