package engine_test

// Black-box tests of the FTN12 AsyncSteps engine, written against the public
// contract (CONTRACT.md, "engine" and reactor.NewManual) and FTN12 v1.14
// sections 1 and 2.1-2.2. This file holds the shared helpers and the tests of
// sequencing, values, state, validity, roots, Stack and cloning.

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// ---------------------------------------------------------------- helpers

// logger collects lines written by callbacks. Callbacks run on the goroutine
// that drives the manual reactor (the test goroutine), so no lock is needed.
type logger struct{ lines []string }

func (l *logger) add(format string, a ...any) { l.lines = append(l.lines, fmt.Sprintf(format, a...)) }

// fn returns a step that logs s.
func (l *logger) fn(s string) engine.ExecFunc {
	return func(as *engine.Steps) { l.add("%s", s) }
}

func (l *logger) check(t *testing.T, want ...string) {
	t.Helper()
	if !slices.Equal(l.lines, want) {
		t.Fatalf("log mismatch\n got: %s\nwant: %s", strings.Join(l.lines, " | "), strings.Join(want, " | "))
	}
}

// isDone reports whether p has ended, without blocking.
func isDone(p *engine.Promise) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

// waitDone fails the test if p has not ended yet, else returns its result.
func waitDone(t *testing.T, p *engine.Promise) (*engine.Args, error) {
	t.Helper()
	if !isDone(p) {
		t.Fatalf("flow has not ended")
	}
	return p.Wait()
}

// runFlow executes root with a Promise, drives r until idle and returns
// the Promise's result; the flow must have ended.
func runFlow(t *testing.T, r *reactor.Reactor, root *engine.Steps) (*engine.Args, error) {
	t.Helper()
	p := root.Promise()
	r.RunUntilIdle()
	return waitDone(t, p)
}

// codeOf returns the Code of an *engine.Error, "" for nil.
func codeOf(err error) string {
	if err == nil {
		return ""
	}
	var fe *engine.Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return fmt.Sprintf("<not an *engine.Error: %T %v>", err, err)
}

func wantNoErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("flow failed: %v", err)
	}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("flow succeeded, want error %q", code)
	}
	var fe *engine.Error
	if !errors.As(err, &fe) {
		t.Fatalf("error is %T (%v), want *engine.Error", err, err)
	}
	if fe.Code != code {
		t.Fatalf("error code %q (%v), want %q", fe.Code, err, code)
	}
}

// pcOf is the entry PC of a func value as CONTRACT.md defines AsyncStack entries.
func pcOf(f any) uintptr { return reflect.ValueOf(f).Pointer() }

// driveUntil drives r on the test goroutine until cond holds, letting other
// goroutines run in between; it fails after a real-time deadline.
func driveUntil(t *testing.T, r *reactor.Reactor, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.RunUntilIdle()
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached before deadline")
		}
		runtime.Gosched()
	}
}

// ---------------------------------------------------------------- values

func TestValueRoundTrip(t *testing.T) {
	type obj struct{ n int }
	o := &obj{n: 7}
	cases := []struct {
		name  string
		v     engine.Value
		kind  engine.Kind
		check func(v engine.Value) bool
	}{
		{"Int", engine.Int(-42), engine.KindInt, func(v engine.Value) bool { return v.Int() == -42 }},
		{"IntMin", engine.Int(math.MinInt64), engine.KindInt, func(v engine.Value) bool { return v.Int() == math.MinInt64 }},
		{"Uint", engine.Uint(math.MaxUint64), engine.KindUint, func(v engine.Value) bool { return v.Uint() == math.MaxUint64 }},
		{"Float", engine.Float(-3.25), engine.KindFloat, func(v engine.Value) bool { return v.Float() == -3.25 }},
		{"BoolTrue", engine.Bool(true), engine.KindBool, func(v engine.Value) bool { return v.Bool() }},
		{"BoolFalse", engine.Bool(false), engine.KindBool, func(v engine.Value) bool { return !v.Bool() }},
		{"Str", engine.Str("héllo, world"), engine.KindStr, func(v engine.Value) bool { return v.Str() == "héllo, world" }},
		{"StrEmpty", engine.Str(""), engine.KindStr, func(v engine.Value) bool { return v.Str() == "" }},
		{"Bytes", engine.Bytes([]byte{0, 1, 2, 255}), engine.KindBytes, func(v engine.Value) bool { return slices.Equal(v.Bytes(), []byte{0, 1, 2, 255}) }},
		{"ObjPtr", engine.Obj(o), engine.KindObj, func(v engine.Value) bool { p, ok := v.Obj().(*obj); return ok && p == o && p.n == 7 }},
		{"ObjString", engine.Obj("s"), engine.KindObj, func(v engine.Value) bool { s, ok := v.Obj().(string); return ok && s == "s" }},
		{"ObjNil", engine.Obj(nil), engine.KindObj, func(v engine.Value) bool { return v.Obj() == nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reactor.NewManual()
			root := engine.New(r)
			var seen engine.Value
			var seenLen int
			root.Add(func(as *engine.Steps) { as.Success(c.v) })
			root.Add(func(as *engine.Steps) {
				seen, seenLen = as.Arg(0), as.Args().Len()
				as.Success(seen) // pass it on to the Promise
			})
			args, err := runFlow(t, r, root)
			wantNoErr(t, err)
			if seenLen != 1 || seen.Kind() != c.kind || !c.check(seen) {
				t.Fatalf("next step got len=%d kind=%v value=%v; want len 1, kind %v", seenLen, seen.Kind(), seen.Obj(), c.kind)
			}
			if args.Len() != 1 || args.At(0).Kind() != c.kind || !c.check(args.At(0)) {
				t.Fatalf("Promise got len=%d kind=%v; want kind %v", args.Len(), args.At(0).Kind(), c.kind)
			}
		})
	}
}

func TestFourValuesAndOutOfRange(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	var got []engine.Value
	var n int
	root.Add(func(as *engine.Steps) {
		as.Success(engine.Int(1), engine.Str("two"), engine.Bool(true), engine.Float(4.5))
	})
	root.Add(func(as *engine.Steps) {
		a := as.Args()
		n = a.Len()
		for i := -1; i <= 5; i++ {
			got = append(got, a.At(i))
		}
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	if n != 4 {
		t.Fatalf("Args().Len() = %d, want 4", n)
	}
	if got[0].Kind() != engine.KindNone || got[5].Kind() != engine.KindNone || got[6].Kind() != engine.KindNone {
		t.Fatalf("At out of range not zero Value: At(-1)=%v At(4)=%v At(5)=%v", got[0].Kind(), got[5].Kind(), got[6].Kind())
	}
	if got[1].Int() != 1 || got[2].Str() != "two" || !got[3].Bool() || got[4].Float() != 4.5 {
		t.Fatalf("values: %v %v %v %v", got[1].Obj(), got[2].Obj(), got[3].Obj(), got[4].Obj())
	}
	if (engine.Value{}).Kind() != engine.KindNone {
		t.Fatalf("zero Value is not KindNone")
	}
}

func TestSuccessStep(t *testing.T) {
	t.Run("level0", func(t *testing.T) {
		r := reactor.NewManual()
		root := engine.New(r)
		var got string
		var gotN int64
		root.SuccessStep(engine.Int(7), engine.Str("x"))
		root.Add(func(as *engine.Steps) { gotN, got = as.Arg(0).Int(), as.Arg(1).Str() })
		root.SuccessStep(engine.Str("end"))
		args, err := runFlow(t, r, root)
		wantNoErr(t, err)
		if gotN != 7 || got != "x" {
			t.Fatalf("step after SuccessStep got %d %q", gotN, got)
		}
		if args.Len() != 1 || args.At(0).Str() != "end" {
			t.Fatalf("Promise values: len %d %q", args.Len(), args.At(0).Str())
		}
	})
	t.Run("afterSubSteps", func(t *testing.T) {
		// Spec 1.12: value=123; as.add(subStep()); as.successStep(value):
		// the parent's next sibling receives the value.
		r := reactor.NewManual()
		root := engine.New(r)
		var log logger
		var got int64 = -1
		root.Add(func(as *engine.Steps) {
			as.Add(func(as *engine.Steps) { log.add("sub"); as.Success(engine.Int(1)) })
			as.SuccessStep(engine.Int(123))
		})
		root.Add(func(as *engine.Steps) { got = as.Arg(0).Int() })
		_, err := runFlow(t, r, root)
		wantNoErr(t, err)
		log.check(t, "sub")
		if got != 123 {
			t.Fatalf("got %d, want 123", got)
		}
	})
	t.Run("noValues", func(t *testing.T) {
		r := reactor.NewManual()
		root := engine.New(r)
		n := -1
		root.Add(func(as *engine.Steps) { as.Success(engine.Int(5)) })
		root.SuccessStep()
		root.Add(func(as *engine.Steps) { n = as.Args().Len() })
		_, err := runFlow(t, r, root)
		wantNoErr(t, err)
		if n != 0 {
			t.Fatalf("after SuccessStep() Args().Len() = %d, want 0", n)
		}
	})
}

func TestSubStepValuesReachNextSibling(t *testing.T) {
	// "Success result of any step becomes input for the following step": a
	// step completed by its sub-steps passes on the last sub-step's values.
	r := reactor.NewManual()
	root := engine.New(r)
	var got string
	root.Add(func(as *engine.Steps) {
		as.Add(func(as *engine.Steps) { as.Success(engine.Str("first")) })
		as.Add(func(as *engine.Steps) {
			if as.Arg(0).Str() != "first" {
				as.Error("BadArg", as.Arg(0).Str())
			}
			as.Success(engine.Str("last"))
		})
	})
	root.Add(func(as *engine.Steps) { got = as.Arg(0).Str() })
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	if got != "last" {
		t.Fatalf("got %q, want %q", got, "last")
	}
}

func TestImplicitSuccessClearsValues(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	n := -1
	root.Add(func(as *engine.Steps) { as.Success(engine.Int(1), engine.Int(2)) })
	root.Add(func(as *engine.Steps) {}) // implicit success (spec 1.6)
	root.Add(func(as *engine.Steps) { n = as.Args().Len() })
	args, err := runFlow(t, r, root)
	wantNoErr(t, err)
	if n != 0 {
		t.Fatalf("step after implicit success got %d values, want 0", n)
	}
	if args.Len() != 0 {
		t.Fatalf("Promise got %d values after implicit success, want 0", args.Len())
	}
}

func TestStepAfterParallelGetsNoValues(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	n := -1
	root.Add(func(as *engine.Steps) { as.Success(engine.Int(1)) })
	root.Parallel().
		Add(func(as *engine.Steps) { as.Success(engine.Int(5)) }).
		Add(func(as *engine.Steps) { as.Success(engine.Str("b"), engine.Int(6)) })
	root.Add(func(as *engine.Steps) { n = as.Args().Len() })
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	if n != 0 {
		t.Fatalf("step after parallel got %d values, want 0", n)
	}
}

func TestLevelsOrder(t *testing.T) {
	// Spec 1.1.
	r := reactor.NewManual()
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		log.add("L0 add #1")
		as.Add(func(as *engine.Steps) {
			log.add("L1 add #1")
			as.Add(log.fn("L2 add #1"))
			as.Parallel().Add(log.fn("L2 parallel #2"))
			as.Add(log.fn("L2 add #3"))
		})
		as.Parallel().Add(log.fn("L1 parallel #2"))
		as.Add(log.fn("L1 add #3"))
	})
	root.Parallel().Add(log.fn("L0 parallel #2"))
	root.Add(log.fn("L0 add #3"))
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, "L0 add #1", "L1 add #1", "L2 add #1", "L2 parallel #2", "L2 add #3",
		"L1 parallel #2", "L1 add #3", "L0 parallel #2", "L0 add #3")
}

// ---------------------------------------------------------------- state

func TestStateSamePointerAndKeys(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	want := root.State()
	if want == nil {
		t.Fatal("root.State() is nil")
	}
	var where []string
	check := func(as *engine.Steps, at string) {
		if as.State() != want {
			where = append(where, at)
		}
	}
	root.Set("k", 1)
	root.Add(func(as *engine.Steps) {
		check(as, "step")
		if as.Get("k") != 1 || !as.Exists("k") {
			where = append(where, "Get in step")
		}
		as.Set("k2", "v")
		as.Add(func(as *engine.Steps) {
			check(as, "sub-step")
			as.Error("E")
		}, func(as *engine.Steps, code string) {
			check(as, "error handler")
			as.Success()
		})
		as.Parallel().Add(func(as *engine.Steps) { check(as, "branch 1") }).
			Add(func(as *engine.Steps) {
				check(as, "branch 2")
				as.Add(func(as *engine.Steps) { check(as, "branch 2 sub-step") })
			})
		as.Repeat(1, func(as *engine.Steps, i int) { check(as, "loop body") })
		as.Add(func(as *engine.Steps) {
			ext := as.External()
			as.SetCancel(func(c *engine.Steps) {})
			r.Immediate(func() { ext.Success() })
		})
	})
	root.Add(func(as *engine.Steps) {
		as.Unset("k")
		if as.Exists("k") || as.Get("k") != nil {
			where = append(where, "Unset")
		}
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	if len(where) != 0 {
		t.Fatalf("State() differs or keyed access failed at: %v", where)
	}
	if root.Get("k2") != "v" {
		t.Fatalf("root.Get(k2) = %v after flow", root.Get("k2"))
	}
	if root.State() != want {
		t.Fatalf("root.State() changed")
	}
}

func TestRootIDSequentialEqualsRoot(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	id := root.RootID()
	if id == 0 {
		t.Fatal("root.RootID() is 0")
	}
	var bad []string
	root.Add(func(as *engine.Steps) {
		if as.RootID() != id {
			bad = append(bad, "level0")
		}
		as.Add(func(as *engine.Steps) {
			if as.RootID() != id {
				bad = append(bad, "level1")
			}
		})
		as.Repeat(2, func(as *engine.Steps, i int) {
			if as.RootID() != id {
				bad = append(bad, "loop body")
			}
		})
	})
	root.Add(func(as *engine.Steps) {
		if as.RootID() != id {
			bad = append(bad, "level0 #2")
		}
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	if len(bad) > 0 {
		t.Fatalf("RootID differs from root's at %v", bad)
	}
	other := engine.New(r)
	if other.RootID() == id {
		t.Fatalf("two live roots share RootID %x", id)
	}
}

// ---------------------------------------------------------------- Valid, roots

func TestValid(t *testing.T) {
	var nilSteps *engine.Steps
	if nilSteps.Valid() {
		t.Fatal("nil.Valid() = true")
	}
	r := reactor.NewManual()
	root := engine.New(r)
	if !root.Valid() {
		t.Fatal("new root not Valid")
	}
	var stale *engine.Steps
	var inside, staleLater bool
	root.Add(func(as *engine.Steps) { stale = as; inside = as.Valid() })
	root.Add(func(as *engine.Steps) { staleLater = stale.Valid() })
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	if !inside {
		t.Fatal("running step's accessor not Valid inside its callback")
	}
	if staleLater {
		t.Fatal("accessor of an ended step is still Valid in the next step")
	}
	if !root.Valid() {
		t.Fatal("root not Valid after its flow ended")
	}
	engine.SkipIfDebug(t) // the rest is a released root's Valid
	root.Release()
	if root.Valid() {
		t.Fatal("released root is Valid")
	}
}

func TestRootReuse(t *testing.T) {
	for _, end := range []string{"success", "error", "cancel"} {
		t.Run(end, func(t *testing.T) {
			r := reactor.NewManual()
			var log logger
			root := engine.New(r)
			root.Add(func(as *engine.Steps) {
				log.add("run1")
				switch end {
				case "error":
					as.Error("E1")
				case "cancel":
					as.WaitExternal()
				}
			})
			p := root.Promise()
			r.RunUntilIdle()
			if end == "cancel" {
				root.Cancel()
				r.RunUntilIdle()
			}
			_, err := waitDone(t, p)
			switch end {
			case "success":
				wantNoErr(t, err)
			case "error":
				wantCode(t, err, "E1")
			case "cancel":
				wantCode(t, err, engine.Canceled)
			}
			root.Add(func(as *engine.Steps) { log.add("run2"); as.Success(engine.Int(2)) })
			args, err := runFlow(t, r, root)
			wantNoErr(t, err)
			if args.At(0).Int() != 2 {
				t.Fatalf("second run result %v", args.At(0).Obj())
			}
			log.check(t, "run1", "run2")
		})
	}
}

func TestReleaseThenNew(t *testing.T) {
	r := reactor.NewManual()
	const n = 20
	roots := make([]*engine.Steps, n)
	for round := 0; round < 3; round++ {
		for i := range roots {
			roots[i] = engine.New(r)
			if !roots[i].Valid() {
				t.Fatalf("round %d: New returned an invalid root", round)
			}
			v := int64(round*100 + i)
			roots[i].Add(func(as *engine.Steps) { as.Success(engine.Int(v)) })
		}
		ps := make([]*engine.Promise, n)
		for i := range roots {
			ps[i] = roots[i].Promise()
		}
		r.RunUntilIdle()
		for i, p := range ps {
			args, err := waitDone(t, p)
			wantNoErr(t, err)
			if args.At(0).Int() != int64(round*100+i) {
				t.Fatalf("round %d root %d got %d", round, i, args.At(0).Int())
			}
		}
		for _, rt := range roots {
			rt.Release()
		}
	}
	inst := engine.New(r).NewInstance()
	inst.SuccessStep(engine.Str("inst"))
	args, err := runFlow(t, r, inst)
	wantNoErr(t, err)
	if args.At(0).Str() != "inst" {
		t.Fatalf("NewInstance root result %q", args.At(0).Str())
	}
}

// ---------------------------------------------------------------- Stack[T]

func TestStackZeroedAcrossReuse(t *testing.T) {
	r := reactor.NewManual()
	type blob struct {
		a [8]int64
		s string
		p *int
	}
	dirty := 0
	for i := 0; i < 200; i++ {
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			b := engine.Stack[blob](as)
			w := engine.Stack[[40]byte](as)
			if *b != (blob{}) || *w != ([40]byte{}) {
				dirty++
			}
			for j := range b.a {
				b.a[j] = -1
			}
			b.s, b.p = "dirty", new(int)
			for j := range w {
				w[j] = 0xff
			}
		})
		_, err := runFlow(t, r, root)
		wantNoErr(t, err)
		root.Release()
	}
	if dirty != 0 {
		t.Fatalf("Stack returned non-zeroed memory %d times", dirty)
	}
}

func TestStackLivesWithSubSteps(t *testing.T) {
	r := reactor.NewManual()
	type holder struct {
		n   int
		buf []byte
	}
	var log logger
	root := engine.New(r)
	root.Add(func(as *engine.Steps) {
		h := engine.Stack[holder](as)
		h.n = 42
		h.buf = make([]byte, 4096)
		for i := range h.buf {
			h.buf[i] = byte(i)
		}
		as.Add(func(as *engine.Steps) {
			ext := as.External()
			r.Deferred(5*time.Millisecond, func() {
				// Churn the heap and collect while the pointer is only held by Stack memory.
				for i := 0; i < 100; i++ {
					_ = make([]byte, 4096)
				}
				runtime.GC()
				runtime.GC()
				ext.Success()
			})
		})
		as.Add(func(as *engine.Steps) {
			ok := h.n == 42 && len(h.buf) == 4096
			for i := range h.buf {
				if h.buf[i] != byte(i) {
					ok = false
					break
				}
			}
			log.add("sub2 ok=%v", ok)
			h.n = 43
		})
		as.Add(func(as *engine.Steps) { log.add("sub3 n=%d", h.n) })
	})
	p := root.Promise()
	r.RunUntilIdle()
	r.Advance(5 * time.Millisecond)
	_, err := waitDone(t, p)
	wantNoErr(t, err)
	log.check(t, "sub2 ok=true", "sub3 n=43")
}

// ---------------------------------------------------------------- CopyFrom / Clone

// buildModel returns a root with sequential, parallel, loop, SuccessStep and
// error-handling steps, and state a=1, b=2.
func buildModel(r *reactor.Reactor, log *logger) *engine.Steps {
	m := engine.New(r)
	m.Set("a", 1)
	m.Set("b", 2)
	m.Add(func(as *engine.Steps) { log.add("m1"); as.Success(engine.Int(10)) })
	m.Parallel().Add(log.fn("p1")).Add(log.fn("p2"))
	m.Repeat(2, func(as *engine.Steps, i int) { log.add("r%d", i) })
	m.Add(func(as *engine.Steps) { as.Error("E") }, func(as *engine.Steps, code string) {
		log.add("h:%s", code)
		as.Success()
	})
	m.SuccessStep(engine.Str("end"))
	return m
}

var modelLog = []string{"m1", "p1", "p2", "r0", "r1", "h:E"}

func TestCopyFromRoot(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	model := buildModel(r, &log)
	target := engine.New(r)
	target.Set("a", 100)
	target.CopyFrom(model)
	args, err := runFlow(t, r, target)
	wantNoErr(t, err)
	log.check(t, modelLog...)
	if args.At(0).Str() != "end" {
		t.Fatalf("result %q, want end", args.At(0).Str())
	}
	if target.Get("a") != 100 {
		t.Fatalf("present state value overwritten: a=%v, want 100", target.Get("a"))
	}
	if target.Get("b") != 2 {
		t.Fatalf("missing state value not copied: b=%v, want 2", target.Get("b"))
	}
	// The model itself is untouched and still runs the same steps.
	log.lines = nil
	args, err = runFlow(t, r, model)
	wantNoErr(t, err)
	log.check(t, modelLog...)
	if args.At(0).Str() != "end" || model.Get("a") != 1 {
		t.Fatalf("model changed: result %q a=%v", args.At(0).Str(), model.Get("a"))
	}
}

func TestCopyFromInsideStep(t *testing.T) {
	// Spec 1.5: copyFrom inside a running step adds the model's steps there.
	r := reactor.NewManual()
	var log logger
	model := buildModel(r, &log)
	root := engine.New(r)
	root.Set("a", "mine")
	root.Add(func(as *engine.Steps) {
		as.Add(log.fn("before"))
		as.CopyFrom(model)
		as.Add(func(as *engine.Steps) { log.add("after %s", as.Arg(0).Str()) })
	})
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	log.check(t, append(append([]string{"before"}, modelLog...), "after end")...)
	if root.Get("a") != "mine" || root.Get("b") != 2 {
		t.Fatalf("state after CopyFrom: a=%v b=%v, want mine 2", root.Get("a"), root.Get("b"))
	}
}

func TestClone(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	model := buildModel(r, &log)
	c := model.Clone()
	if c == model || c.RootID() == model.RootID() {
		t.Fatal("Clone returned the same root")
	}
	if c.Get("a") != 1 || c.Get("b") != 2 {
		t.Fatalf("clone state a=%v b=%v", c.Get("a"), c.Get("b"))
	}
	c.Set("a", 5)
	if model.Get("a") != 1 {
		t.Fatal("setting the clone's state changed the model's")
	}
	args, err := runFlow(t, r, c)
	wantNoErr(t, err)
	log.check(t, modelLog...)
	if args.At(0).Str() != "end" {
		t.Fatalf("clone result %q", args.At(0).Str())
	}
	log.lines = nil
	_, err = runFlow(t, r, model)
	wantNoErr(t, err)
	log.check(t, modelLog...)
}

// ---------------------------------------------------------------- Sync

type recordingSync struct {
	got   *engine.Steps
	calls int
}

func (s *recordingSync) Sync(as *engine.Steps, f engine.ExecFunc, onerror engine.ErrorFunc) {
	s.got = as
	s.calls++
	as.Add(f, onerror)
}

func TestSyncCallsObjectWithSameAccessor(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	s := &recordingSync{}
	root := engine.New(r)
	var acc *engine.Steps
	root.Add(func(as *engine.Steps) {
		acc = as
		as.Sync(s, func(as *engine.Steps) { log.add("critical"); as.Error("E") }, func(as *engine.Steps, code string) {
			log.add("eh %s", code)
			as.Success(engine.Int(1))
		})
		log.add("after Sync call")
	})
	root.Add(func(as *engine.Steps) { log.add("next %d", as.Arg(0).Int()) })
	_, err := runFlow(t, r, root)
	wantNoErr(t, err)
	if s.calls != 1 || s.got != acc {
		t.Fatalf("Sync called %d times with %p, want once with the step's accessor %p", s.calls, s.got, acc)
	}
	log.check(t, "after Sync call", "critical", "eh E", "next 1")
}
