package engine_test

// Misuse (FTN12 2.1 "any violation is reported as as.error(InternalError)";
// CONTRACT.md "Misuse"): the step currently executing fails with InternalError
// and an explanatory ErrorInfo; the process survives; other flows are not
// touched.

import (
	"errors"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

var errBoom = errors.New("boom")

// misuseResult is what a misusing step's own error handler saw.
type misuseResult struct {
	called bool
	code   string
	info   string
	le     error
}

// runMisuse runs body as a step (with an error handler that records what it
// gets) beside an unrelated flow on the same reactor, and checks the common
// guarantees. It returns what the handler saw.
func runMisuse(t *testing.T, body engine.ExecFunc) misuseResult {
	t.Helper()
	r := reactor.NewManual()
	// An unrelated flow, in flight across the misuse.
	other := engine.New(r)
	other.Add(func(as *engine.Steps) { as.Success(engine.Int(41)) })
	other.Add(func(as *engine.Steps) {
		v := as.Arg(0).Int() + 1
		ext := as.External()
		r.Deferred(time.Millisecond, func() { ext.Success(engine.Int(v)) })
	})
	po := other.Promise()

	var res misuseResult
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.Add(body, func(as *engine.Steps, code string) {
			res = misuseResult{true, code, as.State().ErrorInfo, as.State().LastException}
		})
		as.Add(log.fn("step after misuse"))
	})
	root.Add(log.fn("next level-0 step"))
	p := root.Promise()
	r.RunUntilIdle()
	r.Advance(time.Millisecond)
	_, err := waitDone(t, p)
	wantCode(t, err, engine.InternalError)
	if !res.called {
		t.Fatal("the misusing step's error handler was not called")
	}
	if res.code != engine.InternalError {
		t.Fatalf("handler got %q, want InternalError", res.code)
	}
	if res.info == "" {
		t.Fatal("ErrorInfo is empty")
	}
	log.check(t) // nothing after the failed step ran
	args, err := waitDone(t, po)
	wantNoErr(t, err)
	if args.At(0).Int() != 42 {
		t.Fatalf("unrelated flow got %d, want 42", args.At(0).Int())
	}
	return res
}

func TestMisuseFailsRunningStep(t *testing.T) {
	noop := func(as *engine.Steps) {}
	cases := []struct {
		name string
		body engine.ExecFunc
	}{
		{"SuccessAfterSubSteps", func(as *engine.Steps) { as.Add(noop); as.Success() }},
		{"SuccessTwice", func(as *engine.Steps) { as.Success(); as.Success() }},
		{"MoreThanFourValues", func(as *engine.Steps) {
			as.Success(engine.Int(1), engine.Int(2), engine.Int(3), engine.Int(4), engine.Int(5))
		}},
		{"SuccessStepMoreThanFourValues", func(as *engine.Steps) {
			as.SuccessStep(engine.Int(1), engine.Int(2), engine.Int(3), engine.Int(4), engine.Int(5))
		}},
		{"NilExecFunc", func(as *engine.Steps) { as.Add(nil) }},
		{"MoreThanOneErrorFunc", func(as *engine.Steps) {
			h := func(as *engine.Steps, code string) {}
			as.Add(noop, h, h)
		}},
		{"ParallelMoreThanOneErrorFunc", func(as *engine.Steps) {
			h := func(as *engine.Steps, code string) {}
			as.Parallel(h, h)
		}},
		{"SuccessWithValuesOnParallelAccessor", func(as *engine.Steps) {
			as.Parallel().Success(engine.Int(1))
		}},
		{"BreakOutsideLoop", func(as *engine.Steps) { as.Break() }},
		{"ContinueOutsideLoop", func(as *engine.Steps) { as.Continue() }},
		{"PanicString", func(as *engine.Steps) { panic("kaboom") }},
		{"PanicError", func(as *engine.Steps) { panic(errBoom) }},
		{"PanicNilPointer", func(as *engine.Steps) {
			var p *struct{ x int }
			_ = p.x
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runMisuse(t, c.body) })
	}
}

func TestMisuseUnknownLabel(t *testing.T) {
	for _, op := range []string{"Break", "Continue"} {
		t.Run(op, func(t *testing.T) {
			r := reactor.NewManual()
			var res misuseResult
			iterations := 0
			root := engine.New(r)
			root.Add(func(as *engine.Steps) {
				as.Repeat(3, func(as *engine.Steps, i int) {
					iterations++
					as.Add(func(as *engine.Steps) {
						if op == "Break" {
							as.Break("NOSUCH")
						}
						as.Continue("NOSUCH")
					}, func(as *engine.Steps, code string) {
						res = misuseResult{true, code, as.State().ErrorInfo, as.State().LastException}
					})
				}, "LOOP")
			})
			_, err := runFlow(t, r, root)
			wantCode(t, err, engine.InternalError)
			if !res.called || res.code != engine.InternalError || res.info == "" {
				t.Fatalf("handler: %+v", res)
			}
			if iterations != 1 {
				t.Fatalf("loop went on after the misuse: %d iterations", iterations)
			}
		})
	}
}

func TestMisuseStaleAccessorAdd(t *testing.T) {
	// Add through an accessor kept from a finished step, called inside
	// another step's callback: the running step fails.
	var stale *engine.Steps
	r := reactor.NewManual()
	var res misuseResult
	ran := false
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { stale = as })
	root.Add(func(as *engine.Steps) {
		stale.Add(func(as *engine.Steps) { ran = true })
	}, func(as *engine.Steps, code string) {
		res = misuseResult{true, code, as.State().ErrorInfo, as.State().LastException}
	})
	_, err := runFlow(t, r, root)
	wantCode(t, err, engine.InternalError)
	if !res.called || res.code != engine.InternalError || res.info == "" {
		t.Fatalf("handler: %+v", res)
	}
	if ran {
		t.Fatal("step added through a stale accessor ran")
	}
}

func TestMisuseAccessorOfAnotherStep(t *testing.T) {
	// Add through the accessor of the parent step (not the running one).
	r := reactor.NewManual()
	var res misuseResult
	root := engine.New(r)
	root.Add(func(parent *engine.Steps) {
		parent.Add(func(as *engine.Steps) {
			parent.Add(func(as *engine.Steps) {})
		}, func(as *engine.Steps, code string) {
			res = misuseResult{true, code, as.State().ErrorInfo, as.State().LastException}
		})
	})
	_, err := runFlow(t, r, root)
	wantCode(t, err, engine.InternalError)
	if !res.called || res.info == "" {
		t.Fatalf("handler: %+v", res)
	}
}

func TestPanicLastException(t *testing.T) {
	t.Run("errorValue", func(t *testing.T) {
		res := runMisuse(t, func(as *engine.Steps) { panic(errBoom) })
		var pe *engine.PanicError
		if !errors.As(res.le, &pe) {
			t.Fatalf("LastException %T, want *engine.PanicError", res.le)
		}
		if pe.Value != errBoom {
			t.Fatalf("PanicError.Value %v", pe.Value)
		}
		if !errors.Is(res.le, errBoom) {
			t.Fatal("errors.Is(LastException, panic value) = false: Unwrap does not give the error")
		}
		if pe.Unwrap() != errBoom {
			t.Fatal("Unwrap() is not the panic value")
		}
	})
	t.Run("nonErrorValue", func(t *testing.T) {
		res := runMisuse(t, func(as *engine.Steps) { panic("kaboom") })
		pe, ok := res.le.(*engine.PanicError)
		if !ok {
			t.Fatalf("LastException %T, want *engine.PanicError", res.le)
		}
		if pe.Value != "kaboom" || pe.Unwrap() != nil {
			t.Fatalf("PanicError %#v, Unwrap %v", pe, pe.Unwrap())
		}
	})
}

func TestPanicInErrorHandler(t *testing.T) {
	r := reactor.NewManual()
	var code string
	var le error
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.Add(func(as *engine.Steps) { as.Error("First") }, func(as *engine.Steps, c string) {
			log.add("inner handler %s", c)
			panic(errBoom)
		})
	}, func(as *engine.Steps, c string) {
		code, le = c, as.State().LastException
		log.add("outer handler %s", c)
		as.Success()
	})
	root.Add(log.fn("next"))
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "inner handler First", "outer handler InternalError", "next")
	var pe *engine.PanicError
	if code != engine.InternalError || !errors.As(le, &pe) || !errors.Is(le, errBoom) {
		t.Fatalf("outer handler got %q, LastException %#v", code, le)
	}
}

func TestMisuseInErrorHandlerKeepsUnwinding(t *testing.T) {
	// A misuse inside an error handler behaves as Error(InternalError) there:
	// it replaces the code, and the next handler below sees InternalError.
	r := reactor.NewManual()
	var got string
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.Add(func(as *engine.Steps) { as.Error("First") }, func(as *engine.Steps, c string) {
			as.Success()
			as.Success()
		})
	}, func(as *engine.Steps, c string) { got = c })
	_, err := runFlow(t, r, root)
	wantCode(t, err, engine.InternalError)
	if got != engine.InternalError {
		t.Fatalf("outer handler got %q", got)
	}
}

func TestPanicInCancelHandlerDoesNotStopCancel(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.SetCancel(func(*engine.Steps) { log.add("outer cancel") })
		as.Add(func(as *engine.Steps) {
			as.SetCancel(func(*engine.Steps) { log.add("inner cancel"); panic("in cancel") })
		})
	})
	p := root.Promise()
	r.RunUntilIdle()
	root.Cancel()
	r.RunUntilIdle()
	_, err := waitDone(t, p)
	wantCode(t, err, engine.Canceled)
	log.check(t, "inner cancel", "outer cancel")
}

func TestMisuseManyFlowsSurvive(t *testing.T) {
	// Many misusing flows interleaved with good ones on the same reactor.
	r := reactor.NewManual()
	const n = 100
	ps := make([]*engine.Promise, n)
	for i := range ps {
		root := engine.New(r)
		switch i % 4 {
		case 0:
			root.Add(func(as *engine.Steps) { panic(i) })
		case 1:
			root.Add(func(as *engine.Steps) { as.Success(); as.Success() })
		case 2:
			root.Add(func(as *engine.Steps) { as.Break() })
		default:
			root.Add(func(as *engine.Steps) {
				ext := as.External()
				r.Immediate(func() { ext.Success(engine.Int(int64(i))) })
			})
		}
		ps[i] = root.Promise()
	}
	r.RunUntilIdle()
	for i, p := range ps {
		args, err := waitDone(t, p)
		if i%4 == 3 {
			wantNoErr(t, err)
			if args.At(0).Int() != int64(i) {
				t.Fatalf("flow %d got %d", i, args.At(0).Int())
			}
		} else {
			wantCode(t, err, engine.InternalError)
		}
	}
}

// A live accessor used off the loop, while its step runs: the call is
// dropped (the step goes on) without reading loop state such as e.cur.
// The step waits for the call, so the frame cannot be recycled under it: a
// stale accessor used from another goroutine reads memory the loop reuses,
// like any use after free, and is not covered.
func TestOffLoopAccessorCallIsDropped(t *testing.T) {
	r, _ := reactortest.StartRun(t, reactor.Options{CPU: -1})
	defer r.Close()
	for _, op := range []string{"Add", "Arg", "Args"} {
		root := engine.New(r)
		done := make(chan struct{})
		root.Add(func(as *engine.Steps) {
			go func() {
				defer close(done)
				switch op {
				case "Add":
					as.Add(func(*engine.Steps) {})
				case "Arg":
					as.Arg(0)
				case "Args":
					as.Args()
				}
			}()
			<-done
		})
		root.Repeat(100, func(as *engine.Steps, i int) {})
		p := root.Promise()
		if _, err := p.Wait(); err != nil {
			t.Errorf("%s off the loop failed the flow: %v", op, err)
		}
	}
}
