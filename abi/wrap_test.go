package abi_test

import (
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/abi"
	"github.com/asyncsteps/asyncsteps/abi/internal/ctest"
	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// foreignFlow is a root of ctest's foreign C engine, seen from Go through
// abi.Wrap.
type foreignFlow struct {
	t     *testing.T
	p     unsafe.Pointer
	root  *engine.Steps
	base  int // foreign steps alive before this root
	freed bool
}

func newForeign(t *testing.T) *foreignFlow {
	t.Helper()
	ctest.Reset()
	base := ctest.ForeignLive()
	p := ctest.ForeignNew()
	root := abi.Wrap(p)
	if root == nil {
		t.Fatal("Wrap of a foreign root is nil")
	}
	f := &foreignFlow{t: t, p: p, root: root, base: base}
	t.Cleanup(func() {
		if !f.freed {
			ctest.ForeignFree(p) // a test that failed early
		}
	})
	return f
}

// run executes the flow (through the wrapped accessor) and runs the
// foreign engine until it is idle; it returns 1 success, 2 error, 3
// canceled (0 still running) and the code.
func (f *foreignFlow) run() (int, string) {
	f.root.Execute()
	ctest.ForeignRun()
	return ctest.ForeignDone(f.p)
}

// free frees the root and checks that the foreign engine has no live step.
func (f *foreignFlow) free() {
	f.t.Helper()
	f.root.Release()
	f.freed = true
	if n := ctest.ForeignLive() - f.base; n != 0 {
		f.t.Fatalf("%d foreign steps alive after the root was freed", n)
	}
}

func TestWrapForeignIdentity(t *testing.T) {
	f := newForeign(t)
	if abi.Binary(f.root) != f.p {
		t.Fatalf("Binary(Wrap(p)) = %p, want p %p", abi.Binary(f.root), f.p)
	}
	if engine.X.ForeignOf(f.root) == nil {
		t.Fatal("Wrap of a foreign pointer is not a foreign accessor")
	}
	if f.root.RootID() != uintptr(f.p) {
		t.Fatalf("RootID %#x, want the foreign rootId %p", f.root.RootID(), f.p)
	}
	if !f.root.Valid() {
		t.Fatal("a live foreign root is not Valid")
	}
	f.free()
}

// TestWrapForeignFlow: Go steps and C steps in a flow the foreign engine
// drives: values both ways, sub-steps, State shared by all Go steps.
func TestWrapForeignFlow(t *testing.T) {
	f := newForeign(t)
	var seen []int64
	f.root.Add(func(as *engine.Steps) {
		as.State().Set("k", 5)
		as.Success(engine.Int(1), engine.Int(10))
	})
	ctest.Add(f.root, ctest.Inc, 0, 0) // a C step in the foreign flow, reading Go's INT64s
	f.root.Add(func(as *engine.Steps) {
		seen = append(seen, as.Arg(0).Int(), as.Arg(1).Int())
		as.Add(func(as *engine.Steps) {
			ctest.Push(1)
			as.Success(engine.Str("from a Go sub-step"), engine.Float(0.5))
		})
		ctest.Add(as, ctest.Record, 2, 0) // a C sub-step passes them on
	})
	var str string
	var fl float64
	var k any
	f.root.Add(func(as *engine.Steps) {
		// Str shares the foreign engine's memory, which it frees when the
		// value is dropped (at this step's success): keep a copy.
		str, fl = strings.Clone(as.Arg(0).Str()), as.Arg(1).Float()
		k = as.State().Get("k")
		as.Success(engine.Int(99))
	})
	if done, code := f.run(); done != 1 {
		t.Fatalf("flow ended %d %q, want success", done, code)
	}
	if len(seen) != 2 || seen[0] != 2 || seen[1] != 11 {
		t.Fatalf("after the C step: %v, want [2 11]", seen)
	}
	if str != "from a Go sub-step" || fl != 0.5 {
		t.Fatalf("after Go and C sub-steps: %q %v", str, fl)
	}
	if k != 5 {
		t.Fatalf("State().Get(k) = %v, want 5: one State per foreign root", k)
	}
	wantLog(t, 1, 2)
	res := ctest.ForeignResult(f.p)
	if len(res) != 1 || res[0].Int() != 99 {
		t.Fatalf("the flow's result %v, want [99]", res)
	}
	f.free()
}

// TestWrapForeignErrors: errors between Go and C inside a foreign flow.
func TestWrapForeignErrors(t *testing.T) {
	t.Run("C error to a Go handler", func(t *testing.T) {
		f := newForeign(t)
		var code string
		f.root.Add(func(as *engine.Steps) {
			ctest.Add(as, ctest.Fail, 1, 0)
		}, func(as *engine.Steps, c string) {
			code = c
			as.Success(engine.Int(7))
		})
		var got int64
		f.root.Add(func(as *engine.Steps) { got = as.Arg(0).Int() })
		if done, c := f.run(); done != 1 {
			t.Fatalf("flow ended %d %q, want success", done, c)
		}
		if code != "CError" || got != 7 {
			t.Fatalf("Go handler got %q, next step %d; want CError, 7", code, got)
		}
		f.free()
	})
	t.Run("Go error to a C handler", func(t *testing.T) {
		f := newForeign(t)
		ctest.GoStep = func(as *engine.Steps, tag int) {
			ctest.Push(tag)
			as.Error("GoErr", "from Go")
		}
		defer func() { ctest.GoStep = nil }()
		ctest.Add(f.root, ctest.GoAdd, 50, ctest.EHRecover)
		var got int64
		f.root.Add(func(as *engine.Steps) { got = as.Arg(0).Int() })
		if done, c := f.run(); done != 1 {
			t.Fatalf("flow ended %d %q, want success", done, c)
		}
		wantLog(t, 50, 51, -2)
		if ctest.Code() != "GoErr" || got != 42 {
			t.Fatalf("C handler got %q, next step %d; want GoErr, 42", ctest.Code(), got)
		}
		f.free()
	})
	t.Run("Go error unhandled", func(t *testing.T) {
		f := newForeign(t)
		f.root.Add(func(as *engine.Steps) { as.Error("GoErr") })
		f.root.Add(func(as *engine.Steps) { t.Error("the step after a failed step ran") })
		if done, c := f.run(); done != 2 || c != "GoErr" {
			t.Fatalf("flow ended %d %q, want error GoErr", done, c)
		}
		f.free()
	})
	t.Run("panic is InternalError", func(t *testing.T) {
		f := newForeign(t)
		f.root.Add(func(as *engine.Steps) { panic("boom") })
		if done, c := f.run(); done != 2 || c != engine.InternalError {
			t.Fatalf("flow ended %d %q, want error InternalError", done, c)
		}
		f.free()
	})
}

func TestWrapForeignLoops(t *testing.T) {
	f := newForeign(t)
	f.root.Add(func(as *engine.Steps) {
		as.Repeat(10, func(as *engine.Steps, i int) {
			if i == 1 {
				as.Continue()
			}
			if i == 4 {
				as.Break()
			}
			ctest.Push(i)
		})
	})
	n := 0
	f.root.Loop(func(as *engine.Steps) {
		n++
		ctest.Push(100 + n)
		if n == 3 {
			as.Break("outer")
		}
		as.Add(func(as *engine.Steps) { ctest.Push(200 + n) })
	}, "outer")
	if done, c := f.run(); done != 1 {
		t.Fatalf("flow ended %d %q, want success", done, c)
	}
	wantLog(t, 0, 2, 3, 101, 201, 102, 202, 103)
	f.free()
}

// TestWrapForeignParallel: Go and C branches of a parallel step in the
// foreign flow; the failing one cancels the others before the Go handler.
func TestWrapForeignParallel(t *testing.T) {
	f := newForeign(t)
	goCancels := 0
	var handled string
	f.root.Add(func(as *engine.Steps) {
		p := as.Parallel(func(as *engine.Steps, code string) {
			handled = code
			if ctest.Count().Cancels != 1 || goCancels != 1 {
				t.Errorf("in the handler: C cancels %d, Go cancels %d; want 1, 1", ctest.Count().Cancels, goCancels)
			}
			as.Success()
		})
		ctest.Add(p, ctest.Wait, 5, 0)
		p.Add(func(as *engine.Steps) {
			as.SetCancel(func(as *engine.Steps) { goCancels++ })
			as.WaitExternal()
		})
		p.Add(func(as *engine.Steps) { as.Error("GoErr") })
	})
	if done, c := f.run(); done != 1 {
		t.Fatalf("flow ended %d %q, want success", done, c)
	}
	if handled != "GoErr" || ctest.Count().Cancels != 1 || goCancels != 1 {
		t.Fatalf("handler %q, cancels C %d Go %d; want GoErr, 1, 1", handled, ctest.Count().Cancels, goCancels)
	}
	f.free()
}

func TestWrapForeignTimeoutAndWait(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		f := newForeign(t)
		cancels := 0
		var code string
		f.root.Add(func(as *engine.Steps) {
			as.SetTimeout(10 * time.Millisecond)
			as.SetCancel(func(as *engine.Steps) { cancels++ })
		}, func(as *engine.Steps, c string) { code = c })
		if done, _ := f.run(); done != 0 {
			t.Fatalf("flow ended (%d) before the timeout", done)
		}
		ctest.ForeignFireTimeouts()
		ctest.ForeignRun()
		if done, c := ctest.ForeignDone(f.p); done != 2 || c != engine.Timeout {
			t.Fatalf("flow ended %d %q, want error Timeout", done, c)
		}
		if code != engine.Timeout || cancels != 1 {
			t.Fatalf("handler got %q, cancel ran %d times; want Timeout, 1", code, cancels)
		}
		f.free()
	})
	t.Run("C wait completed from outside", func(t *testing.T) {
		f := newForeign(t)
		ctest.Add(f.root, ctest.Wait, 1, 0)
		var got int64
		f.root.Add(func(as *engine.Steps) { got = as.Arg(0).Int() })
		if done, _ := f.run(); done != 0 || !ctest.Waiting() {
			t.Fatal("the C step is not waiting")
		}
		ctest.CompleteWaiting(31)
		ctest.ForeignRun()
		if done, c := ctest.ForeignDone(f.p); done != 1 || got != 31 {
			t.Fatalf("flow ended %d %q with %d, want success 31", done, c, got)
		}
		f.free()
	})
	t.Run("cancel", func(t *testing.T) {
		f := newForeign(t)
		cancels := 0
		f.root.Add(func(as *engine.Steps) {
			as.SetCancel(func(as *engine.Steps) { cancels++ })
			as.WaitExternal()
		}, func(as *engine.Steps, c string) { t.Errorf("error handler called with %q on cancel", c) })
		f.run()
		f.root.Cancel()
		if done, _ := ctest.ForeignDone(f.p); done != 3 || cancels != 1 {
			t.Fatalf("after cancel: done %d, cancels %d; want 3, 1", done, cancels)
		}
		f.free()
	})
}

// TestWrapForeignOwnedStrings: Go strings handed to the foreign engine
// are copies it owns (freed through their type's cleanup when dropped):
// after the root is freed nothing is left, and the C step that reads them
// sees the bytes.
func TestWrapForeignOwnedStrings(t *testing.T) {
	f := newForeign(t)
	long := make([]byte, 300)
	for i := range long {
		long[i] = byte('a' + i%26)
	}
	f.root.Add(func(as *engine.Steps) { as.Success(engine.Str(string(long)), engine.Bytes(long)) })
	ctest.Add(f.root, ctest.Record, 1, 0)
	var s string
	var b []byte
	f.root.Add(func(as *engine.Steps) {
		s, b = strings.Clone(as.Arg(0).Str()), append([]byte(nil), as.Arg(1).Bytes()...)
	})
	if done, c := f.run(); done != 1 {
		t.Fatalf("flow ended %d %q, want success", done, c)
	}
	if s != string(long) || string(b) != string(long) {
		t.Fatalf("strings through the foreign engine changed: %d %d bytes", len(s), len(b))
	}
	f.free()
}

// TestWrapSyncGoesThroughForeignAddSync: Go's Sync in a foreign flow
// becomes the foreign engine's addSync (ctest's engine runs the section
// without locking), with the Go object crossing as one FutoInSync.
func TestWrapSyncGoesThroughForeignAddSync(t *testing.T) {
	f := newForeign(t)
	m := syncprim.NewMutex(1, 0)
	ran := 0
	f.root.Sync(m, func(as *engine.Steps) {
		ran++
		as.Success(engine.Int(7))
	})
	f.root.Add(func(as *engine.Steps) {
		if got := as.Arg(0).Int(); got != 7 {
			as.Error("Wrong", "section value lost")
		}
	})
	if st, code := f.run(); st != 1 {
		t.Fatalf("flow ended %d %q, want success", st, code)
	}
	if ran != 1 {
		t.Fatalf("section ran %d times, want 1", ran)
	}
	f.free()
}
