package abi_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"
	"weak"

	"github.com/asyncsteps/asyncsteps/abi"
	"github.com/asyncsteps/asyncsteps/abi/internal/ctest"
	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// harness is one root on a manual reactor, with ctest's C log reset.
type harness struct {
	t    *testing.T
	r    *reactor.Reactor
	root *engine.Steps
	p    *engine.Promise
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ctest.Reset()
	r := reactor.NewManual()
	return &harness{t: t, r: r, root: engine.New(r)}
}

// start executes the root and runs the loop until nothing is ready.
func (h *harness) start() {
	h.p = h.root.Promise()
	h.r.RunUntilIdle()
}

// ended reports whether the flow has ended.
func (h *harness) ended() bool {
	select {
	case <-h.p.Done():
		return true
	default:
		return false
	}
}

// result waits for nothing: the flow must have ended. It returns the
// values and the error code ("" for a success).
func (h *harness) result() ([]engine.Value, string) {
	h.t.Helper()
	if !h.ended() {
		h.t.Fatal("the flow has not ended")
	}
	args, err := h.p.Wait()
	if err != nil {
		var e *engine.Error
		if !errors.As(err, &e) {
			h.t.Fatalf("Wait error %T %v, want *engine.Error", err, err)
		}
		return nil, e.Code
	}
	var vals []engine.Value
	for i := 0; i < args.Len(); i++ {
		vals = append(vals, args.At(i))
	}
	return vals, ""
}

// run executes the root and returns its result.
func (h *harness) run() ([]engine.Value, string) {
	h.t.Helper()
	h.start()
	return h.result()
}

// release gives the root back and checks that no frame or root is left.
func (h *harness) release() {
	h.t.Helper()
	h.root.Release()
	checkStats(h.t, h.r)
}

func checkStats(t *testing.T, r *reactor.Reactor) {
	t.Helper()
	st := engine.StatsOf(r)
	if st.FramesLive != 0 || st.FlowsLive != 0 || st.RootsLive != 0 {
		t.Fatalf("engine stats after the flows ended and roots were released: %+v, want no live frames, flows or roots", st)
	}
}

func wantLog(t *testing.T, want ...int) {
	t.Helper()
	got := ctest.Log()
	if len(got) != len(want) {
		t.Fatalf("C log %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("C log %v, want %v", got, want)
		}
	}
}

func TestBinaryWrapRoundTrip(t *testing.T) {
	h := newHarness(t)
	if abi.Binary(nil) != nil {
		t.Fatal("Binary(nil) != nil")
	}
	if abi.Wrap(nil) != nil {
		t.Fatal("Wrap(nil) != nil")
	}
	rootBin := abi.Binary(h.root)
	if rootBin == nil || abi.Wrap(rootBin) != h.root {
		t.Fatalf("Wrap(Binary(root)) = %p, want the root %p", abi.Wrap(rootBin), h.root)
	}
	var kept *engine.Steps
	var keptBin unsafe.Pointer
	h.root.Add(func(as *engine.Steps) {
		p := abi.Binary(as)
		if p == nil {
			t.Error("Binary of the running step is nil")
			return
		}
		if p == rootBin {
			t.Error("the step's FutoInAsyncSteps* is the root's")
		}
		if q := abi.Binary(as); q != p {
			t.Errorf("Binary twice: %p then %p", p, q)
		}
		if w := abi.Wrap(p); w != as {
			t.Errorf("Wrap(Binary(as)) = %p, want as %p", w, as)
		}
		kept, keptBin = as, p
	})
	if _, code := h.run(); code != "" {
		t.Fatalf("flow failed: %s", code)
	}
	if b := abi.Binary(kept); b != nil {
		t.Errorf("Binary on a stale accessor = %p, want nil", b)
	}
	if w := abi.Wrap(keptBin); w != nil {
		t.Errorf("Wrap of a stale step's pointer = %p, want nil", w)
	}
	h.release()
}

// TestAlternation passes values Go -> C -> Go and C -> Go -> C: every Go
// kind through a C step that succeeds with the values it got (unchanged),
// and C integers through Go.
func TestAlternation(t *testing.T) {
	type obj struct{ n int }
	o := &obj{n: 3}
	cases := []struct {
		name  string
		v     engine.Value
		check func(v engine.Value) bool
	}{
		{"Int", engine.Int(-5), func(v engine.Value) bool { return v.Kind() == engine.KindInt && v.Int() == -5 }},
		{"Uint", engine.Uint(1 << 63), func(v engine.Value) bool { return v.Kind() == engine.KindUint && v.Uint() == 1<<63 }},
		{"Float", engine.Float(2.5), func(v engine.Value) bool { return v.Kind() == engine.KindFloat && v.Float() == 2.5 }},
		{"Bool", engine.Bool(true), func(v engine.Value) bool { return v.Kind() == engine.KindBool && v.Bool() }},
		{"Str", engine.Str("hello, C"), func(v engine.Value) bool { return v.Kind() == engine.KindStr && v.Str() == "hello, C" }},
		{"Bytes", engine.Bytes([]byte{1, 2, 3}), func(v engine.Value) bool {
			return v.Kind() == engine.KindBytes && string(v.Bytes()) == "\x01\x02\x03"
		}},
		{"Obj", engine.Obj(o), func(v engine.Value) bool { return v.Kind() == engine.KindObj && v.Obj() == o }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.root.Add(func(as *engine.Steps) { as.Success(c.v, engine.Int(7)) })
			ctest.Add(h.root, ctest.Record, 1, ctest.NoHandler)
			var got engine.Value
			var got1 int64
			h.root.Add(func(as *engine.Steps) { got, got1 = as.Arg(0), as.Arg(1).Int() })
			if _, code := h.run(); code != "" {
				t.Fatalf("flow failed: %s (%s)", code, h.root.State().ErrorInfo)
			}
			wantLog(t, 1)
			if !c.check(got) || got1 != 7 {
				t.Fatalf("after a C step: %v (kind %v), %d; want %v, 7", got, got.Kind(), got1, c.v)
			}
			h.release()
		})
	}
}

// TestIntsThroughCAndGo: Go -> C Inc -> Go -> C Inc -> C Inc -> Go.
func TestIntsThroughCAndGo(t *testing.T) {
	h := newHarness(t)
	h.root.Add(func(as *engine.Steps) { as.Success(engine.Int(1), engine.Int(10)) })
	ctest.Add(h.root, ctest.Inc, 0, 0)
	h.root.Add(func(as *engine.Steps) {
		if as.Arg(0).Kind() != engine.KindInt || as.Arg(0).Int() != 2 || as.Arg(1).Int() != 11 {
			t.Errorf("after C Inc: %v %v", as.Arg(0), as.Arg(1))
		}
		as.Success(engine.Int(as.Arg(0).Int()*10), engine.Int(as.Arg(1).Int()*10))
	})
	ctest.Add(h.root, ctest.Inc, 0, 0)
	ctest.Add(h.root, ctest.Inc, 0, 0)
	vals, code := h.run()
	if code != "" || len(vals) != 2 || vals[0].Int() != 22 || vals[1].Int() != 112 {
		t.Fatalf("result %v %q, want [22 112]", vals, code)
	}
	if a, b := ctest.IncSeen(); a != 21 || b != 111 {
		t.Fatalf("the last C step read %d %d, want 21 111", a, b)
	}
	h.release()
}

// TestGoMemoryThroughC: a Go heap string (and byte slice) that a C step
// passes on unchanged must stay alive while the flow holds it: the value
// that comes back may not be an untraced copy of its address.
func TestGoMemoryThroughC(t *testing.T) {
	for _, kind := range []string{"Str", "Bytes"} {
		t.Run(kind, func(t *testing.T) {
			h := newHarness(t)
			var wp weak.Pointer[[256]byte]
			h.root.Add(func(as *engine.Steps) {
				buf := new([256]byte)
				for i := range buf {
					buf[i] = byte('a' + i%26)
				}
				wp = weak.Make(buf)
				if kind == "Str" {
					as.Success(engine.Str(unsafe.String(&buf[0], len(buf))))
				} else {
					as.Success(engine.Bytes(buf[:]))
				}
			})
			ctest.Add(h.root, ctest.Record, 1, 0)
			var collected bool
			var ok bool
			h.root.Add(func(as *engine.Steps) {
				runtime.GC()
				runtime.GC()
				collected = wp.Value() == nil
				b := as.Arg(0).Bytes()
				ok = len(b) == 256 && b[0] == 'a' && b[255] == byte('a'+255%26)
			})
			if _, code := h.run(); code != "" {
				t.Fatalf("flow failed: %s (%s)", code, h.root.State().ErrorInfo)
			}
			if collected {
				t.Errorf("the Go memory of a %s that a C step passed on was collected while the next step held it", kind)
			}
			if !ok {
				t.Errorf("the %s's bytes changed after passing through C", kind)
			}
			h.release()
		})
	}
}

// TestGoAddFromC: a C step adds a C step, a Go step (through abi.Wrap of
// its own pointer) and a C step: they run in that order.
func TestGoAddFromC(t *testing.T) {
	h := newHarness(t)
	ctest.Add(h.root, ctest.GoAdd, 50, 0)
	if _, code := h.run(); code != "" {
		t.Fatalf("flow failed: %s (%s)", code, h.root.State().ErrorInfo)
	}
	wantLog(t, 50, 51, 52)
	h.release()
}

func TestCSubStepsAndHandlers(t *testing.T) {
	cases := []struct {
		name     string
		build    func(root *engine.Steps)
		wantCode string
		wantLog  []int
		wantVal  int64 // -1: none checked
		cCode    string
	}{
		{"sub-steps", func(root *engine.Steps) { ctest.Add(root, ctest.AddSubs, 3, 0) }, "", []int{100, 101, 102}, -1, ""},
		{"fail unhandled", func(root *engine.Steps) {
			ctest.Add(root, ctest.Fail, 1, 0)
			ctest.Add(root, ctest.Mark, 2, 0)
		}, "CError", []int{1}, -1, ""},
		{"own handler records", func(root *engine.Steps) { ctest.Add(root, ctest.Fail, 1, ctest.EHRecord) }, "CError", []int{1, -1}, -1, "CError"},
		{"handler recovers", func(root *engine.Steps) {
			ctest.Add(root, ctest.Fail, 1, ctest.EHRecover)
			ctest.Add(root, ctest.Record, 2, 0)
		}, "", []int{1, -2, 2}, 42, "CError"},
		{"handler rethrows to a Go handler", func(root *engine.Steps) {
			root.Add(func(as *engine.Steps) { ctest.Add(as, ctest.Fail, 1, ctest.EHRethrow) },
				func(as *engine.Steps, code string) {
					ctest.Push(-100)
					if code == "Rethrown" {
						as.Success(engine.Int(5))
					}
				})
		}, "", []int{1, -3, -100}, 5, "CError"},
		{"Go error reaches a C handler", func(root *engine.Steps) {
			ctest.GoStep = func(as *engine.Steps, tag int) { ctest.Push(tag); as.Error("GoErr", "from Go") }
			ctest.Add(root, ctest.GoAdd, 50, ctest.EHRecord)
		}, "GoErr", []int{50, 51, -1}, -1, "GoErr"},
		{"sub-step error reaches the C step's handler", func(root *engine.Steps) {
			root.Add(func(as *engine.Steps) {
				as.Add(func(as *engine.Steps) { ctest.Add(as, ctest.Fail, 7, 0) })
			}, func(as *engine.Steps, code string) { ctest.Push(-200) })
		}, "CError", []int{7, -200}, -1, ""},
		{"repeat break continue", func(root *engine.Steps) {
			ctest.SetLoopControl(3, 1)
			ctest.Add(root, ctest.Repeat, 6, 0)
		}, "", []int{1000, 1002, 1003}, -1, ""},
		{"loop with label", func(root *engine.Steps) { ctest.Add(root, ctest.Loop, 3, 0) }, "", []int{2001, 2002, 2003}, -1, ""},
		{"C parallel", func(root *engine.Steps) { ctest.Add(root, ctest.Parallel, 20, 0) },
			"CError", []int{20, 21, -10020, -1}, -1, "CError"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			defer func() { ctest.GoStep = nil }()
			c.build(h.root)
			vals, code := h.run()
			if code != c.wantCode {
				t.Fatalf("flow ended with %q (%s), want %q", code, h.root.State().ErrorInfo, c.wantCode)
			}
			wantLog(t, c.wantLog...)
			if c.wantVal >= 0 && (len(vals) == 0 || vals[0].Int() != c.wantVal) {
				t.Fatalf("result %v, want %d first", vals, c.wantVal)
			}
			if ctest.Code() != c.cCode {
				t.Fatalf("C handler saw %q, want %q", ctest.Code(), c.cCode)
			}
			h.release()
		})
	}
}

func TestCStackAndState(t *testing.T) {
	h := newHarness(t)
	ctest.Add(h.root, ctest.StackStep, 0xAB, 0)
	ctest.Add(h.root, ctest.StackStep, 0xCD, 0)
	ctest.Add(h.root, ctest.StateStep, 0, 0)
	h.root.Add(func(as *engine.Steps) {
		if c := ctest.Count(); c.StackCleanups != 4 {
			t.Errorf("stack cleanups after both stack steps ended: %d, want 4", c.StackCleanups)
		}
	})
	ctest.Add(h.root, ctest.StateStep, 0, 0)
	vals, code := h.run()
	if code != "" || len(vals) != 1 || vals[0].Int() != 2 {
		t.Fatalf("result %v %q, want [2]: the state variable is shared by the root's steps", vals, code)
	}
	c := ctest.Count()
	if c.StackBad != 0 || c.StackCleanups != 4 {
		t.Fatalf("stack: %d not zeroed, %d cleanups; want 0, 4", c.StackBad, c.StackCleanups)
	}
	if c.StateAllocs != 1 || c.StateCleanups != 0 {
		t.Fatalf("state before release: %d allocs %d cleanups, want 1, 0", c.StateAllocs, c.StateCleanups)
	}
	h.release()
	if c := ctest.Count(); c.StateCleanups != 1 {
		t.Fatalf("state cleanups after release: %d, want 1", c.StateCleanups)
	}
}

// TestMixedParallel: C and Go branches in one Parallel, one failing: the
// others are canceled (C and Go cancel handlers once each) before the
// parallel step's handler runs.
func TestMixedParallel(t *testing.T) {
	for _, failer := range []string{"C", "Go"} {
		t.Run("fail="+failer, func(t *testing.T) {
			h := newHarness(t)
			goCancels := 0
			var handled []string
			h.root.Add(func(as *engine.Steps) {
				p := as.Parallel(func(as *engine.Steps, code string) {
					handled = append(handled, code)
					ctest.Push(-1)
					if c := ctest.Count(); c.Cancels != 1 || goCancels != 1 {
						t.Errorf("in the parallel's handler: %d C and %d Go cancels, want 1 and 1", c.Cancels, goCancels)
					}
					as.Success() // a parallel step takes no values
				})
				ctest.Add(p, ctest.Wait, 7, 0)
				p.Add(func(as *engine.Steps) {
					as.SetCancel(func(as *engine.Steps) { goCancels++ })
					as.WaitExternal()
				})
				ctest.Add(p, ctest.Record, 8, 0)
				if failer == "C" {
					ctest.Add(p, ctest.Fail, 9, 0)
				} else {
					p.Add(func(as *engine.Steps) { as.Error("GoErr") })
				}
			})
			vals, code := h.run()
			if code != "" || len(vals) != 0 {
				t.Fatalf("result %v %q (%s), want a success with no values", vals, code, h.root.State().ErrorInfo)
			}
			want := "CError"
			if failer == "Go" {
				want = "GoErr"
			}
			if len(handled) != 1 || handled[0] != want {
				t.Fatalf("parallel handler calls %v, want [%s]", handled, want)
			}
			if c := ctest.Count(); c.Cancels != 1 || goCancels != 1 {
				t.Fatalf("cancels: C %d Go %d, want 1, 1", c.Cancels, goCancels)
			}
			h.release()
		})
	}
}

// TestExternalFromAnotherThread: a C step that waits is finished by C code
// on another goroutine (thread), through its FutoInAsyncSteps*.
func TestExternalFromAnotherThread(t *testing.T) {
	h := newHarness(t)
	ctest.Add(h.root, ctest.Wait, 1, 0)
	var got engine.Value
	h.root.Add(func(as *engine.Steps) { got = as.Arg(0) })
	h.start()
	if h.ended() || !ctest.Waiting() {
		t.Fatal("the C step is not waiting")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctest.CompleteWaiting(77)
	}()
	<-done
	h.r.RunUntilIdle()
	if _, code := h.result(); code != "" {
		t.Fatalf("flow failed: %s", code)
	}
	if got.Kind() != engine.KindInt || got.Int() != 77 {
		t.Fatalf("the next step got %v, want Int 77", got)
	}
	if c := ctest.Count(); c.Cancels != 0 {
		t.Fatalf("cancel handler ran %d times for a step that succeeded", c.Cancels)
	}
	h.release()
}

func TestExternalError(t *testing.T) {
	h := newHarness(t)
	ctest.Add(h.root, ctest.Wait, 1, ctest.EHRecord)
	h.start()
	ctest.FailWaiting("Boom")
	h.r.RunUntilIdle()
	if _, code := h.result(); code != "Boom" {
		t.Fatalf("flow ended with %q, want Boom", code)
	}
	if ctest.Code() != "Boom" {
		t.Fatalf("the C handler saw %q, want Boom", ctest.Code())
	}
	h.release()
}

// TestMisuseFromC: each misuse fails its own flow with InternalError and
// an ErrorInfo naming the problem; a flow on another root of the same
// reactor, running at the same time, is unaffected.
func TestMisuseFromC(t *testing.T) {
	cases := []struct {
		name  string
		build func(root *engine.Steps)
		info  string
	}{
		{"success twice", func(root *engine.Steps) { ctest.Add(root, ctest.MisuseSuccessTwice, 0, ctest.EHInfo) }, "twice"},
		{"add after success", func(root *engine.Steps) { ctest.Add(root, ctest.MisuseAddAfterSucces, 0, ctest.EHInfo) }, "after success"},
		{"call after handle_error", func(root *engine.Steps) { ctest.Add(root, ctest.MisuseAfterError, 0, ctest.EHInfo) }, "after handle_error"},
		{"NULL add", func(root *engine.Steps) { ctest.Add(root, ctest.MisuseNullAdd, 0, ctest.EHInfo) }, "NULL"},
		{"NULL cancel", func(root *engine.Steps) { ctest.Add(root, ctest.MisuseNullCancel, 0, ctest.EHInfo) }, "NULL"},
		{"pointer kept past its step", func(root *engine.Steps) {
			ctest.Add(root, ctest.MisuseKeep, 0, 0)
			ctest.Add(root, ctest.MisuseUseKept, 0, ctest.EHInfo)
		}, "kept past its step"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			other := engine.New(h.r)
			other.Add(func(as *engine.Steps) { as.Success(engine.Int(1), engine.Int(2)) })
			ctest.Add(other, ctest.Wait, 900, 0)
			ctest.Add(other, ctest.Inc, 0, 0)
			op := other.Promise()
			c.build(h.root)
			h.start()
			if _, code := h.result(); code != engine.InternalError {
				t.Fatalf("flow ended with %q, want InternalError", code)
			}
			if info := h.root.State().ErrorInfo; !strings.Contains(info, c.info) {
				t.Fatalf("ErrorInfo %q does not contain %q", info, c.info)
			}
			if ctest.Code() != engine.InternalError || !strings.Contains(ctest.Info(), c.info) {
				t.Fatalf("the C handler saw %q with error_info %q, want InternalError and %q", ctest.Code(), ctest.Info(), c.info)
			}
			// The other flow still waits in its C step, and finishes.
			ctest.CompleteWaiting(0)
			h.r.RunUntilIdle()
			args, err := op.Wait()
			if err != nil || args.At(0).Int() != 1 || args.At(1).Int() != 1 {
				t.Fatalf("the other flow: %v, %v %v; want success 1 1", err, args.At(0), args.At(1))
			}
			other.Release()
			h.release()
		})
	}
}

// TestCTimeoutAndCancel runs, on a manual reactor, a C step with a
// timeout and a cancel handler beside the same step written in Go: both
// get Timeout in their handler after the deadline (not before) and run
// their cancel handler once; a canceled flow runs a C cancel handler once
// and no error handler.
func TestCTimeoutAndCancel(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		// The Go step, for reference.
		r := reactor.NewManual()
		goRoot := engine.New(r)
		goCancels, goCode := 0, ""
		goRoot.Add(func(as *engine.Steps) {
			as.SetTimeout(100 * 1e6)
			as.SetCancel(func(as *engine.Steps) { goCancels++ })
		}, func(as *engine.Steps, code string) { goCode = code })
		goRoot.Promise()
		r.RunUntilIdle()
		r.Advance(101 * 1e6)

		h := newHarness(t)
		ctest.Add(h.root, ctest.Timeout, 100, ctest.EHRecord)
		h.start()
		h.r.Advance(99 * 1e6)
		if h.ended() {
			t.Fatal("the flow ended before the timeout")
		}
		h.r.Advance(2 * 1e6)
		if _, code := h.result(); code != engine.Timeout {
			t.Fatalf("flow ended with %q, want Timeout", code)
		}
		if ctest.Code() != engine.Timeout || goCode != engine.Timeout {
			t.Fatalf("handlers saw C %q Go %q, want Timeout", ctest.Code(), goCode)
		}
		// A step's timeout cancels it: its cancel handler runs once, then
		// its error handler gets Timeout (as for the same step in Go).
		if c := ctest.Count(); c.Cancels != 1 || goCancels != 1 {
			t.Fatalf("cancel handler ran %d times for C, %d for Go; want 1, 1", c.Cancels, goCancels)
		}
		h.release()
		goRoot.Release()
	})
	t.Run("cancel", func(t *testing.T) {
		h := newHarness(t)
		h.root.Add(func(as *engine.Steps) { ctest.Add(as, ctest.Wait, 3, ctest.EHRecord) })
		h.start()
		h.root.Cancel()
		h.r.RunUntilIdle()
		if _, code := h.result(); code != engine.Canceled {
			t.Fatalf("flow ended with %q, want Canceled", code)
		}
		wantLog(t, 3, -10003) // the step, its cancel handler; no error handler (-1)
		if c := ctest.Count(); c.Cancels != 1 {
			t.Fatalf("cancel handler ran %d times, want 1", c.Cancels)
		}
		h.release()
	})
}

// TestNoLeakedFrames runs flows of many shapes on one reactor and checks
// that every frame and root is given back.
func TestNoLeakedFrames(t *testing.T) {
	ctest.Reset()
	r := reactor.NewManual()
	builds := []func(root *engine.Steps){
		func(root *engine.Steps) { ctest.Add(root, ctest.Inc, 0, 0) },
		func(root *engine.Steps) { ctest.Add(root, ctest.AddSubs, 4, 0) },
		func(root *engine.Steps) { ctest.Add(root, ctest.Fail, 0, ctest.EHRecover) },
		func(root *engine.Steps) { ctest.Add(root, ctest.Parallel, 0, 0) },
		func(root *engine.Steps) { ctest.Add(root, ctest.Repeat, 5, 0) },
		func(root *engine.Steps) { ctest.Add(root, ctest.Timeout, 5, 0) },
		func(root *engine.Steps) { ctest.Add(root, ctest.Wait, 0, 0) }, // canceled below
		func(root *engine.Steps) { ctest.Add(root, ctest.Owned, 3, 0) },
		func(root *engine.Steps) { ctest.Add(root, ctest.MisuseSuccessTwice, 0, 0) },
	}
	var roots []*engine.Steps
	for round := 0; round < 3; round++ {
		for _, b := range builds {
			root := engine.New(r)
			b(root)
			root.Execute()
			roots = append(roots, root)
		}
		r.RunUntilIdle()
		r.Advance(10 * 1e6)
		for _, root := range roots {
			root.Cancel()
		}
		r.RunUntilIdle()
		for _, root := range roots {
			root.Release()
		}
		roots = roots[:0]
		checkStats(t, r)
	}
	if c := ctest.Count(); c.ValueCleanups != 9 {
		t.Fatalf("owned value cleanups %d, want 9 (3 per round)", c.ValueCleanups)
	}
}

// TestAddC: Go code adds C steps with their function pointers, on a root
// and inside a running step, in order with C's own adds and with Go's;
// a nil callback is the flow's InternalError.
func TestAddC(t *testing.T) {
	h := newHarness(t)
	ctest.AddGo(h.root, ctest.Mark, 1, 0)
	h.root.Add(func(as *engine.Steps) {
		ctest.Push(2)
		ctest.AddGo(as, ctest.Mark, 3, 0)
		as.Add(func(as *engine.Steps) { ctest.Push(4) })
	})
	ctest.AddGo(h.root, ctest.Mark, 5, 0)
	if _, code := h.run(); code != "" {
		t.Fatalf("flow failed: %s (%s)", code, h.root.State().ErrorInfo)
	}
	if got, want := fmt.Sprint(ctest.Log()), "[1 2 3 4 5]"; got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
	h.release()

	h = newHarness(t)
	h.root.Add(func(as *engine.Steps) { abi.AddC(as, nil, nil, nil) })
	if _, code := h.run(); code != engine.InternalError {
		t.Fatalf("nil callback: code %q, want InternalError", code)
	}
	h.release()
}
