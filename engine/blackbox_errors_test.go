package engine_test

// Error handlers (FTN12 1.2, 1.2.1, 2.1 error_callback) and the error state
// of 1.7 (ErrorInfo, LastException, AsyncStack).

import (
	"errors"
	"slices"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

func TestSpec12ErrorHandling(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		log.add("Level 0 func")
		as.Add(func(as *engine.Steps) {
			log.add("Level 1 func")
			as.Error("myerror")
		}, func(as *engine.Steps, code string) {
			log.add("Level 1 onerror: %s", code)
			as.Error("newerror")
		})
	}, func(as *engine.Steps, code string) {
		log.add("Level 0 onerror: %s", code)
		as.Success(engine.Str("Prm"))
	})
	root.Add(func(as *engine.Steps) {
		log.add("Level 0 func2: %s", as.Arg(0).Str())
		as.Success()
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "Level 0 func", "Level 1 func", "Level 1 onerror: myerror",
		"Level 0 onerror: newerror", "Level 0 func2: Prm")
}

func TestSpec121HandlerNotCalledTwice(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		log.add("Level 0 func")
		as.Add(func(as *engine.Steps) {
			log.add("Level 1 func")
			as.Error("first")
		}, func(as *engine.Steps, code string) {
			log.add("Level 1 onerror: %s", code)
			as.Add(func(as *engine.Steps) {
				log.add("Level 2 func")
				as.Error("second")
			}, func(as *engine.Steps, code string) {
				log.add("Level 2 onerror: %s", code)
			})
		})
	}, func(as *engine.Steps, code string) {
		log.add("Level 0 onerror: %s", code)
	})
	_, err := runFlow(t, r, root)
	wantCode(t, err, "second")
	log.check(t, "Level 0 func", "Level 1 func", "Level 1 onerror: first",
		"Level 2 func", "Level 2 onerror: second", "Level 0 onerror: second")
}

func TestErrorHandlerOutcomes(t *testing.T) {
	// Each row: the inner step fails with "inner"; its handler does
	// something; we check what runs next and how the flow ends.
	cases := []struct {
		name    string
		handler engine.ErrorFunc
		wantLog []string
		code    string // "" = flow succeeds
	}{
		{
			name:    "SuccessContinuesAfterFailingStepsLevel",
			handler: func(as *engine.Steps, code string) { as.Success(engine.Str("rec")) },
			wantLog: []string{"inner", "sibling got rec", "outer handler not called", "next"},
		},
		{
			name:    "ErrorReplacesCode",
			handler: func(as *engine.Steps, code string) { as.Error("replaced", "info2") },
			wantLog: []string{"inner", "outer handler: replaced info2"},
			code:    "replaced",
		},
		{
			name:    "SilentReturnKeepsUnwinding",
			handler: func(as *engine.Steps, code string) {},
			wantLog: []string{"inner", "outer handler: inner info1"},
			code:    "inner",
		},
		{
			name:    "NilHandlerMeansNone",
			handler: nil,
			wantLog: []string{"inner", "outer handler: inner info1"},
			code:    "inner",
		},
		{
			name: "AddInHandlerIsImplicitSuccess",
			handler: func(as *engine.Steps, code string) {
				as.Add(func(as *engine.Steps) { as.Success(engine.Str("alt")) })
			},
			wantLog: []string{"inner", "sibling got alt", "outer handler not called", "next"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reactor.NewManual()
			var log logger
			outerCalled := false
			root := engine.New(r)
			root.Add(func(as *engine.Steps) {
				as.Add(func(as *engine.Steps) {
					log.add("inner")
					as.Error("inner", "info1")
				}, c.handler)
				as.Add(func(as *engine.Steps) { log.add("sibling got %s", as.Arg(0).Str()) })
			}, func(as *engine.Steps, code string) {
				outerCalled = true
				log.add("outer handler: %s %s", code, as.State().ErrorInfo)
			})
			root.Add(func(as *engine.Steps) {
				if !outerCalled {
					log.add("outer handler not called")
				}
				log.add("next")
			})
			_, err := runFlow(t, r, root)
			if c.code == "" {
				wantNoErr(t, err)
			} else {
				wantCode(t, err, c.code)
			}
			log.check(t, c.wantLog...)
		})
	}
}

func TestPromiseErrorHasCodeAndInfo(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { as.Error(engine.NotImplemented, "not yet") })
	_, err := runFlow(t, r, root)
	wantCode(t, err, engine.NotImplemented)
	var fe *engine.Error
	errors.As(err, &fe)
	if fe.Info != "not yet" {
		t.Fatalf("Promise error Info %q, want %q", fe.Info, "not yet")
	}
	if err.Error() != "NotImplemented: not yet" {
		t.Fatalf("Error() = %q", err.Error())
	}
	if (&engine.Error{Code: "X"}).Error() != "X" {
		t.Fatalf("Error() without info = %q, want X", (&engine.Error{Code: "X"}).Error())
	}
}

func TestErrorInfoAndLastException(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	var info, info2 string
	var le, le2 error
	root.Add(func(as *engine.Steps) {
		as.Add(func(as *engine.Steps) { as.Error("MyCode", "my info") }, func(as *engine.Steps, code string) {
			info, le = as.State().ErrorInfo, as.State().LastException
			as.Success()
		})
		// A later error without info resets error_info (spec 1.7: the value
		// of the second parameter of the last error() call).
		as.Add(func(as *engine.Steps) { as.Error("Other") }, func(as *engine.Steps, code string) {
			info2, le2 = as.State().ErrorInfo, as.State().LastException
			as.Success()
		})
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	if info != "my info" {
		t.Fatalf("ErrorInfo %q, want %q", info, "my info")
	}
	fe, ok := le.(*engine.Error)
	if !ok {
		t.Fatalf("LastException is %T, want *engine.Error", le)
	}
	if fe.Code != "MyCode" || fe.Info != "my info" {
		t.Fatalf("LastException = %+v", fe)
	}
	if !errors.Is(le, &engine.Error{Code: "MyCode"}) {
		t.Fatal("errors.Is(LastException, &Error{Code: MyCode}) = false")
	}
	if errors.Is(le, &engine.Error{Code: "Other"}) {
		t.Fatal("errors.Is matched a different code")
	}
	if info2 != "" {
		t.Fatalf("ErrorInfo after Error without info = %q, want empty", info2)
	}
	if fe2, ok := le2.(*engine.Error); !ok || fe2.Code != "Other" {
		t.Fatalf("second LastException = %#v", le2)
	}
}

// Step functions for the AsyncStack tests: named variables so that their
// entry PCs are easy to compare.
var (
	stackLeaf engine.ExecFunc = func(as *engine.Steps) { as.Error("Deep", "leaf") }
	stackMid  engine.ExecFunc = func(as *engine.Steps) { as.Add(stackLeaf) }
	stackTop  engine.ExecFunc = func(as *engine.Steps) { as.Add(stackMid) }

	branchLeaf engine.ExecFunc = func(as *engine.Steps) { as.Error("BranchErr") }
	branchTop  engine.ExecFunc = func(as *engine.Steps) {
		as.Parallel().Add(func(as *engine.Steps) {}).Add(branchLeaf)
	}
)

func TestAsyncStackSequential(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	var inHandler []uintptr
	root.Add(stackTop, func(as *engine.Steps, code string) {
		inHandler = slices.Clone(as.State().AsyncStack)
	})
	_, err := runFlow(t, r, root)
	wantCode(t, err, "Deep")
	want := []uintptr{pcOf(stackTop), pcOf(stackMid), pcOf(stackLeaf)}
	if len(inHandler) == 0 {
		t.Fatal("AsyncStack empty in handler")
	}
	if inHandler[0] != want[0] {
		t.Fatalf("AsyncStack[0] = %#x, want level-0 step %#x", inHandler[0], want[0])
	}
	if inHandler[len(inHandler)-1] != want[2] {
		t.Fatalf("AsyncStack last = %#x, want failing step %#x", inHandler[len(inHandler)-1], want[2])
	}
	if !slices.Equal(inHandler, want) {
		t.Fatalf("AsyncStack = %#x, want %#x", inHandler, want)
	}
	if got := root.State().AsyncStack; !slices.Equal(got, want) {
		t.Fatalf("root.State().AsyncStack after the flow = %#x, want %#x", got, want)
	}
}

func TestAsyncStackInParallelBranch(t *testing.T) {
	// CONTRACT.md: "the chain of step functions from the root down to the step
	// where the error was raised ... captured when the error is raised".
	// The error is raised in branchLeaf, a branch of a parallel step added
	// by branchTop.
	r := reactor.NewManual()
	root := engine.New(r)
	var got []uintptr
	root.Add(branchTop, func(as *engine.Steps, code string) {
		got = slices.Clone(as.State().AsyncStack)
	})
	_, err := runFlow(t, r, root)
	wantCode(t, err, "BranchErr")
	if len(got) == 0 {
		t.Fatal("AsyncStack empty")
	}
	if got[0] != pcOf(branchTop) {
		t.Fatalf("AsyncStack[0] = %#x, want level-0 step %#x", got[0], pcOf(branchTop))
	}
	if got[len(got)-1] != pcOf(branchLeaf) {
		t.Fatalf("AsyncStack = %#x: last entry is not the failing branch step %#x (branchTop=%#x)",
			got, pcOf(branchLeaf), pcOf(branchTop))
	}
}

func TestAsyncStackInLoopBody(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	var got []uintptr
	leaf := func(as *engine.Steps) { as.Error("LoopErr") }
	top := func(as *engine.Steps) {
		as.Repeat(3, func(as *engine.Steps, i int) {
			if i == 1 {
				as.Add(leaf)
			}
		})
	}
	root.Add(top, func(as *engine.Steps, code string) { got = slices.Clone(as.State().AsyncStack) })
	_, err := runFlow(t, r, root)
	wantCode(t, err, "LoopErr")
	if len(got) < 2 || got[0] != pcOf(top) || got[len(got)-1] != pcOf(leaf) {
		t.Fatalf("AsyncStack = %#x; want first %#x and last %#x", got, pcOf(top), pcOf(leaf))
	}
}

func TestErrorHandlerRunsOnWaitingStepError(t *testing.T) {
	// An error delivered to a waiting step goes to that step's own handler.
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		ext := as.External()
		r.Immediate(func() { ext.Error(engine.CommError, "link down") })
	}, func(as *engine.Steps, code string) {
		log.add("eh %s %s", code, as.State().ErrorInfo)
		as.Success(engine.Int(9))
	})
	root.Add(func(as *engine.Steps) { log.add("next %d", as.Arg(0).Int()) })
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "eh CommError link down", "next 9")
}

func TestUnhandledErrorSkipsRemainingSteps(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		as.Add(func(as *engine.Steps) { log.add("a"); as.Error("Stop") })
		as.Add(log.fn("b"))
	})
	root.Add(log.fn("c"))
	_, err := runFlow(t, r, root)
	wantCode(t, err, "Stop")
	log.check(t, "a")
}
