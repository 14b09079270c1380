package engine_test

// Loops (FTN12 1.8, 2.2.4; CONTRACT.md "Loops").

import (
	"fmt"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

func TestLoopBreak(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		n := 0
		as.Loop(func(as *engine.Steps) {
			n++
			log.add("iter %d", n)
			// Spec 1.8: the break happens in a sub-step of the body.
			as.Add(func(as *engine.Steps) {
				if n == 3 {
					as.Break()
				}
			})
		})
		as.Add(func(as *engine.Steps) { log.add("after loop n=%d args=%d", n, as.Args().Len()) })
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "iter 1", "iter 2", "iter 3", "after loop n=3 args=0")
}

func TestLoopBreakInBody(t *testing.T) {
	r := reactor.NewManual()
	n := 0
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.Loop(func(as *engine.Steps) {
			n++
			if n == 5 {
				as.Break()
			}
		})
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	if n != 5 {
		t.Fatalf("body ran %d times, want 5", n)
	}
}

func TestRepeat(t *testing.T) {
	for _, count := range []int{0, 1, 5} {
		t.Run(fmt.Sprint(count), func(t *testing.T) {
			r := reactor.NewManual()
			var got []int
			done := false
			root := engine.New(r)
			root.Add(func(as *engine.Steps) {
				as.Repeat(count, func(as *engine.Steps, i int) { got = append(got, i) })
				as.Add(func(as *engine.Steps) { done = true })
			})
			_, err := runFlow(t, r, root)
			wantNoErr(t, err)
			if len(got) != count {
				t.Fatalf("body ran %d times, want %d (i=%v)", len(got), count, got)
			}
			for i, v := range got {
				if v != i {
					t.Fatalf("i values %v, want 0..%d", got, count-1)
				}
			}
			if !done {
				t.Fatal("step after Repeat did not run")
			}
		})
	}
}

func TestRepeatLarge(t *testing.T) {
	r := reactor.NewManual()
	sum := 0
	root := engine.New(r)
	root.Repeat(100000, func(as *engine.Steps, i int) { sum += i })
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	if sum != 100000*99999/2 {
		t.Fatalf("sum %d", sum)
	}
}

func TestForEach(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		engine.ForEach(as, []string{"apple", "banana", "cherry"}, func(as *engine.Steps, i int, v string) {
			log.add("%d=%s", i, v)
			as.Add(func(as *engine.Steps) { log.add("sub %d", i) })
		})
		engine.ForEach(as, []int(nil), func(as *engine.Steps, i int, v int) { log.add("empty called") })
		as.Add(log.fn("done"))
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "0=apple", "sub 0", "1=banana", "sub 1", "2=cherry", "sub 2", "done")
}

func TestForEachMapAscending(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		engine.ForEachMap(as, map[int]string{30: "c", 10: "a", 20: "b", -5: "neg"}, func(as *engine.Steps, k int, v string) {
			log.add("%d=%s", k, v)
		})
		engine.ForEachMap(as, map[string]int{"pear": 3, "apple": 1, "fig": 2}, func(as *engine.Steps, k string, v int) {
			log.add("%s=%d", k, v)
		})
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "-5=neg", "10=a", "20=b", "30=c", "apple=1", "fig=2", "pear=3")
}

func TestLabelledBreakOuterFromInner(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.Loop(func(as *engine.Steps) {
			log.add("outer")
			as.Repeat(5, func(as *engine.Steps, i int) {
				log.add("inner %d", i)
				as.Add(func(as *engine.Steps) {
					if i == 1 {
						as.Break("OUTER")
					}
				})
			})
			as.Add(log.fn("after inner"))
		}, "OUTER")
		as.Add(log.fn("done"))
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "outer", "inner 0", "inner 1", "done")
}

func TestUnlabelledBreakEndsInnermostOnly(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.Repeat(2, func(as *engine.Steps, o int) {
			as.Loop(func(as *engine.Steps) {
				log.add("inner %d", o)
				as.Break()
			})
			as.Add(func(as *engine.Steps) { log.add("after inner %d", o) })
		}, "OUTER")
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "inner 0", "after inner 0", "inner 1", "after inner 1")
}

func TestLabelledContinueOuterFromInner(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Repeat(3, func(as *engine.Steps, i int) {
		log.add("outer %d", i)
		as.Loop(func(as *engine.Steps) {
			log.add("inner %d", i)
			as.Add(func(as *engine.Steps) { as.Continue("OUTER") })
			as.Add(log.fn("rest of inner body"))
		})
		as.Add(log.fn("after inner loop"))
	}, "OUTER")
	root.Add(log.fn("done"))
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "outer 0", "inner 0", "outer 1", "inner 1", "outer 2", "inner 2", "done")
}

func TestContinueSkipsRestOfIteration(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Repeat(3, func(as *engine.Steps, i int) {
		as.Add(func(as *engine.Steps) {
			log.add("a%d", i)
			if i == 1 {
				as.Continue()
			}
		})
		as.Add(func(as *engine.Steps) { log.add("b%d", i) })
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "a0", "b0", "a1", "a2", "b2")
}

func TestBreakDoesNotCallErrorHandlers(t *testing.T) {
	for _, op := range []string{"Break", "Continue"} {
		t.Run(op, func(t *testing.T) {
			r := reactor.NewManual()
			var log logger
			root := engine.New(r)
			root.Repeat(3, func(as *engine.Steps, i int) {
				as.Add(func(as *engine.Steps) {
					as.Add(func(as *engine.Steps) {
						if i == 1 {
							if op == "Break" {
								as.Break()
							}
							as.Continue()
						}
						log.add("leaf %d", i)
					}, func(as *engine.Steps, code string) { log.add("leaf handler %s", code) })
				}, func(as *engine.Steps, code string) { log.add("mid handler %s", code) })
			})
			root.Add(log.fn("done"))
			_, err := runFlow(t, r, root)
			wantNoErr(t, err)
			if op == "Break" {
				log.check(t, "leaf 0", "done")
			} else {
				log.check(t, "leaf 0", "leaf 2", "done")
			}
		})
	}
}

func TestErrorInBodyEndsLoopAndUnwinds(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.Repeat(5, func(as *engine.Steps, i int) {
			log.add("it %d", i)
			if i == 2 {
				as.Error("boom", "at 2")
			}
		})
		as.Add(log.fn("after loop"))
	}, func(as *engine.Steps, code string) {
		log.add("handler %s %s", code, as.State().ErrorInfo)
		as.Success()
	})
	root.Add(log.fn("next"))
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "it 0", "it 1", "it 2", "handler boom at 2", "next")
}

func TestErrorInBodyUnhandledFailsFlow(t *testing.T) {
	r := reactor.NewManual()
	n := 0
	root := engine.New(r)
	root.Loop(func(as *engine.Steps) {
		n++
		as.Add(func(as *engine.Steps) { as.Error("LoopFail") })
	})
	_, err := runFlow(t, r, root)
	wantCode(t, err, "LoopFail")
	if n != 1 {
		t.Fatalf("loop body ran %d times after an error, want 1", n)
	}
}

func TestHandlerInsideBodyRecoversAndLoopGoesOn(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Repeat(3, func(as *engine.Steps, i int) {
		as.Add(func(as *engine.Steps) {
			if i == 1 {
				as.Error("x")
			}
			log.add("ok %d", i)
		}, func(as *engine.Steps, code string) {
			log.add("recovered %d %s", i, code)
			as.Success()
		})
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "ok 0", "recovered 1 x", "ok 2")
}

func TestLoopsAddedToRootBeforeExecute(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	n := 0
	root.Loop(func(as *engine.Steps) {
		n++
		log.add("loop %d", n)
		if n == 2 {
			as.Break()
		}
	})
	root.Repeat(2, func(as *engine.Steps, i int) { log.add("repeat %d", i) })
	engine.ForEach(root, []string{"x", "y"}, func(as *engine.Steps, i int, v string) { log.add("each %s", v) })
	engine.ForEachMap(root, map[string]bool{"b": true, "a": false}, func(as *engine.Steps, k string, v bool) {
		log.add("map %s=%v", k, v)
	})
	root.Add(log.fn("done"))
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "loop 1", "loop 2", "repeat 0", "repeat 1", "each x", "each y", "map a=false", "map b=true", "done")
}

func TestLoopWithAsyncBody(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	n := 0
	start := r.Now()
	root.Loop(func(as *engine.Steps) {
		as.Add(func(as *engine.Steps) {
			ext := as.External()
			r.Deferred(10*time.Millisecond, func() { ext.Success() })
		})
		as.Add(func(as *engine.Steps) {
			n++
			log.add("tick %d at %v", n, r.Now().Sub(start))
			if n == 3 {
				as.Break()
			}
		})
	})
	p := root.Promise()
	r.RunUntilIdle()
	r.Advance(25 * time.Millisecond)
	if isDone(p) {
		t.Fatal("loop ended before 30ms")
	}
	r.Advance(5 * time.Millisecond)
	_, err := waitDone(t, p)
	wantNoErr(t, err)
	log.check(t, "tick 1 at 10ms", "tick 2 at 20ms", "tick 3 at 30ms")
}
