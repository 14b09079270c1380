package engine_test

// Parallel steps (FTN12 1.4, 2.2.1 parallel(); CONTRACT.md "Parallel").

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// indexOf returns the position of s in lines, or -1.
func indexOf(lines []string, s string) int { return slices.Index(lines, s) }

func TestParallelBranchesStartInOrderSubStepsSequential(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		p := as.Parallel()
		for _, b := range []string{"b1", "b2", "b3"} {
			p.Add(func(as *engine.Steps) {
				log.add("%s start", b)
				as.Add(func(as *engine.Steps) {
					ext := as.External()
					r.Deferred(time.Millisecond, func() { ext.Success() })
				})
				as.Add(log.fn(b + " s1"))
				as.Add(log.fn(b + " s2"))
			})
		}
		as.Add(log.fn("after parallel"))
	})
	pr := root.Promise()
	r.RunUntilIdle()
	if isDone(pr) {
		t.Fatal("flow ended while branches wait")
	}
	r.Advance(time.Millisecond)
	_, err := waitDone(t, pr)
	wantNoErr(t, err)
	l := log.lines
	if len(l) != 10 || l[9] != "after parallel" {
		t.Fatalf("log %q: want 9 branch lines then 'after parallel'", l)
	}
	if !(indexOf(l, "b1 start") < indexOf(l, "b2 start") && indexOf(l, "b2 start") < indexOf(l, "b3 start")) {
		t.Fatalf("branches did not start in order: %q", l)
	}
	for _, b := range []string{"b1", "b2", "b3"} {
		i0, i1, i2 := indexOf(l, b+" start"), indexOf(l, b+" s1"), indexOf(l, b+" s2")
		if i0 < 0 || i1 < 0 || i2 < 0 || !(i0 < i1 && i1 < i2) {
			t.Fatalf("sub-steps of %s not sequential: %q", b, l)
		}
	}
	// All branches started before any of them finished waiting.
	if indexOf(l, "b3 start") > indexOf(l, "b1 s1") {
		t.Fatalf("branches did not start together: %q", l)
	}
}

func TestParallelBranchFailureCancelsSiblingsFirst(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.Parallel(func(as *engine.Steps, code string) {
			log.add("parallel handler %s %s", code, as.State().ErrorInfo)
		}).
			Add(func(as *engine.Steps) {
				as.SetCancel(func(*engine.Steps) { log.add("cancel b1") })
			}, func(as *engine.Steps, code string) { log.add("b1 handler") }).
			Add(func(as *engine.Steps) {
				as.Add(func(as *engine.Steps) {
					ext := as.External()
					r.Deferred(time.Millisecond, func() { ext.Error("Bad", "branch 2 failed") })
				})
			}).
			Add(func(as *engine.Steps) {
				as.SetCancel(func(*engine.Steps) { log.add("cancel b3 outer") })
				as.Add(func(as *engine.Steps) {
					as.SetCancel(func(*engine.Steps) { log.add("cancel b3 inner") })
				}, func(as *engine.Steps, code string) { log.add("b3 inner handler") })
			}, func(as *engine.Steps, code string) { log.add("b3 handler") })
		as.Add(log.fn("after parallel"))
	}, func(as *engine.Steps, code string) { log.add("outer handler %s", code) })
	p := root.Promise()
	r.RunUntilIdle()
	r.Advance(time.Millisecond)
	_, err := waitDone(t, p)
	wantCode(t, err, "Bad")
	l := log.lines
	ph := indexOf(l, "parallel handler Bad branch 2 failed")
	if ph < 0 {
		t.Fatalf("parallel handler not called with code and info: %q", l)
	}
	for _, c := range []string{"cancel b1", "cancel b3 inner", "cancel b3 outer"} {
		i := indexOf(l, c)
		if i < 0 || i > ph {
			t.Fatalf("%q must run before the parallel step's handler: %q", c, l)
		}
	}
	if indexOf(l, "cancel b3 inner") > indexOf(l, "cancel b3 outer") {
		t.Fatalf("cancel handlers not innermost first: %q", l)
	}
	for _, h := range []string{"b1 handler", "b3 handler", "b3 inner handler", "after parallel"} {
		if indexOf(l, h) >= 0 {
			t.Fatalf("%q must not run: %q", h, l)
		}
	}
	if indexOf(l, "outer handler Bad") != len(l)-1 {
		t.Fatalf("outer handler not last: %q", l)
	}
	if n := len(l); n != 5 {
		t.Fatalf("cancel handlers ran more than once? %q", l)
	}
}

func TestParallelHandlerRecovers(t *testing.T) {
	// Success() without values in the parallel step's error handler (whether
	// values are allowed there is not specified: the spec only says a
	// parallel step's success() takes none, so none are used).
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Parallel(func(as *engine.Steps, code string) {
		log.add("ph %s", code)
		as.Set("fallback", "yes")
		as.Success()
	}).Add(func(as *engine.Steps) { as.Error("E") })
	root.Add(func(as *engine.Steps) { log.add("next %v %d", as.Get("fallback"), as.Args().Len()) })
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "ph E", "next yes 0")
}

func TestParallelBranchHandlerRecoversBranch(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Parallel(func(as *engine.Steps, code string) { log.add("ph %s", code) }).
		Add(func(as *engine.Steps) { as.Error("E") }, func(as *engine.Steps, code string) {
			log.add("branch handler %s", code)
			as.Success()
		}).
		Add(log.fn("b2"))
	root.Add(log.fn("next"))
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	l := log.lines
	if indexOf(l, "ph E") >= 0 || indexOf(l, "next") != len(l)-1 || indexOf(l, "b2") < 0 || indexOf(l, "branch handler E") < 0 {
		t.Fatalf("log %q", l)
	}
}

func TestParallelZeroBranches(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Parallel()
	root.Add(func(as *engine.Steps) {
		as.Parallel()
		as.Add(log.fn("after inner empty parallel"))
	})
	root.Add(log.fn("after"))
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "after inner empty parallel", "after")
}

func TestParallelNested(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Parallel().
		Add(func(as *engine.Steps) {
			as.Parallel().Add(log.fn("a1")).Add(func(as *engine.Steps) {
				ext := as.External()
				r.Deferred(2*time.Millisecond, func() { log.add("a2"); ext.Success() })
			})
			as.Add(log.fn("a after"))
		}).
		Add(func(as *engine.Steps) {
			as.Parallel().Add(log.fn("b1")).Add(log.fn("b2"))
		})
	root.Add(log.fn("end"))
	p := root.Promise()
	r.RunUntilIdle()
	if isDone(p) {
		t.Fatal("done before nested branch finished")
	}
	r.Advance(2 * time.Millisecond)
	_, err := waitDone(t, p)
	wantNoErr(t, err)
	l := log.lines
	if len(l) != 6 || l[5] != "end" || indexOf(l, "a after") < indexOf(l, "a2") || indexOf(l, "a after") < indexOf(l, "a1") {
		t.Fatalf("log %q", l)
	}
}

func TestParallelNestedFailurePropagates(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Parallel(func(as *engine.Steps, code string) { log.add("outer ph %s", code) }).
		Add(func(as *engine.Steps) {
			as.Parallel(func(as *engine.Steps, code string) { log.add("inner ph %s", code) }).
				Add(func(as *engine.Steps) {
					// Fail once every branch has started (and set its cancel handler).
					ext := as.External()
					r.Immediate(func() { ext.Error("Deep") })
				}).
				Add(func(as *engine.Steps) { as.SetCancel(func(*engine.Steps) { log.add("cancel inner sibling") }) })
		}).
		Add(func(as *engine.Steps) { as.SetCancel(func(*engine.Steps) { log.add("cancel outer sibling") }) })
	_, err := runFlow(t, r, root)
	wantCode(t, err, "Deep")
	log.check(t, "cancel inner sibling", "inner ph Deep", "cancel outer sibling", "outer ph Deep")
}

func TestParallelRootIDAndState(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	rootID, st := root.RootID(), root.State()
	var ids [3]uintptr
	var subIDs [3]uintptr
	var after uintptr
	badState := 0
	root.Add(func(as *engine.Steps) {
		p := as.Parallel()
		for i := range ids {
			p.Add(func(as *engine.Steps) {
				ids[i] = as.RootID()
				if as.State() != st {
					badState++
				}
				as.Add(func(as *engine.Steps) {
					subIDs[i] = as.RootID()
					if as.State() != st {
						badState++
					}
				})
			})
		}
		as.Add(func(as *engine.Steps) { after = as.RootID() })
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	if badState != 0 {
		t.Fatalf("State() differs in %d branch callbacks", badState)
	}
	for i, id := range ids {
		if id == 0 || id == rootID {
			t.Fatalf("branch %d RootID %#x equals root's %#x or is 0", i, id, rootID)
		}
		for j := 0; j < i; j++ {
			if ids[j] == id {
				t.Fatalf("branches %d and %d share RootID %#x", j, i, id)
			}
		}
		if subIDs[i] != id {
			t.Fatalf("branch %d sub-step RootID %#x, want the branch's %#x", i, subIDs[i], id)
		}
	}
	if after != rootID {
		t.Fatalf("step after parallel RootID %#x, want root's %#x", after, rootID)
	}
}

func TestParallelBranchTimeout(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Parallel(func(as *engine.Steps, code string) { log.add("ph %s", code) }).
		Add(func(as *engine.Steps) {
			as.SetTimeout(10 * time.Millisecond)
		}).
		Add(func(as *engine.Steps) { as.SetCancel(func(*engine.Steps) { log.add("cancel sibling") }) })
	p := root.Promise()
	r.RunUntilIdle()
	r.Advance(9 * time.Millisecond)
	if isDone(p) || len(log.lines) != 0 {
		t.Fatalf("timed out early: %q", log.lines)
	}
	r.Advance(time.Millisecond)
	_, err := waitDone(t, p)
	wantCode(t, err, engine.Timeout)
	log.check(t, "cancel sibling", "ph Timeout")
}

func TestParallelOnRootWithExternalFromGoroutines(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	const n = 8
	got := make([]bool, n)
	var rejected atomic.Int32
	release := make(chan struct{}) // closed once the branches' callbacks have returned
	p := root.Parallel()
	for i := 0; i < n; i++ {
		p.Add(func(as *engine.Steps) {
			ext := as.External()
			go func() {
				<-release
				if !ext.Success() {
					rejected.Add(1)
				}
			}()
		})
		p.Add(func(as *engine.Steps) { got[i] = true })
	}
	root.SuccessStep(engine.Int(1))
	pr := root.Promise()
	r.RunUntilIdle()
	close(release)
	driveUntil(t, r, func() bool {
		if rejected.Load() != 0 {
			t.Fatalf("External.Success from a goroutine returned false for a step that was still waiting (%d times)", rejected.Load())
		}
		return isDone(pr)
	})
	args, err := pr.Wait()
	wantNoErr(t, err)
	if args.At(0).Int() != 1 {
		t.Fatalf("result %v", args.At(0).Obj())
	}
	for i, g := range got {
		if !g {
			t.Fatalf("branch %d did not run", i)
		}
	}
}

// Spec 1.2.1: an error handler accepts Add as implicit success, also the
// handler of a parallel step at level 0 of a root.
func TestParallelHandlerAtLevel0MayAddSteps(t *testing.T) {
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
