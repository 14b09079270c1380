package engine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A panicking OnEnd (X.OnEnd, stepsd's and the ABI's) ends its root
// exactly once, whatever path ends the root: in the middle of RunReady's
// batch (whose recover used to take the panic for a step's, so that the
// root ended a second time, OnEnd ran twice and the second panic escaped
// RunReady), outside a batch (a root with no steps, ending at its start; a
// Cancel's task; a flow canceled while queued, ended by batchStopped
// outside the recover), and the same with the Promise or the Batch that
// waits for it. The panic is the run's InternalError, as a step's panic
// is (LastException the *PanicError, ErrorInfo its text): the Promise or
// the Batch gets it, the reactor's panic handler gets nothing, no other
// flow of the batch runs twice or is skipped, and the root runs again
// normally, OnEnd included.
func TestOnEndPanicEndsTheRootOnce(t *testing.T) {
	type waiter int
	const (
		plain waiter = iota
		promise
		batch
	)
	for _, tc := range []struct {
		name string
		// how the panicking root (b) ends; a and c, beside it, succeed
		how string
		w   waiter
	}{
		{"batch-middle", "mid-batch", plain},
		{"batch-middle-promise", "mid-batch", promise},
		{"batch-middle-batch", "mid-batch", batch},
		{"batch-middle-failed", "mid-batch-failed", promise},
		{"start", "start", promise},
		{"start-batch", "start", batch},
		{"cancel-task", "cancel", promise},
		{"cancel-queued", "cancel-queued", promise},
		{"cancel-queued-batch", "cancel-queued", batch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := reactor.NewManual()
			var escaped []any
			r.SetPanicHandler(func(v any) { escaped = append(escaped, v) })
			drive := func() {
				// A manual reactor's RunReady is not under the handler's
				// recover: what escapes it is counted the same.
				defer func() {
					if v := recover(); v != nil {
						escaped = append(escaped, v)
					}
				}()
				r.RunUntilIdle()
			}
			var seq []string
			boom := errors.New("onend boom")
			panicking := true
			roots := map[string]*Steps{"a": New(r), "b": New(r), "c": New(r)}
			for _, n := range []string{"a", "b", "c"} {
				X.OnEnd(roots[n], func(_ *Steps, code string) {
					seq = append(seq, n+".end:"+code)
					if n == "b" && panicking {
						panic(boom)
					}
				})
			}
			var xs [3]External
			build := func(run int) {
				for i, n := range []string{"a", "b", "c"} {
					if n == "b" && tc.how == "start" && run == 0 {
						continue // no steps: it ends at its start
					}
					roots[n].Add(func(as *Steps) {
						seq = append(seq, fmt.Sprintf("%s.step%d", n, run))
						if run == 0 {
							xs[i] = as.External()
						}
					})
					if n == "b" && tc.how == "mid-batch-failed" && run == 0 {
						roots[n].Add(func(as *Steps) { as.Error("Boom", "b failed") })
					}
				}
			}

			// Run 0: b's OnEnd panics.
			build(0)
			var p *Promise
			// start executes a, b (as tc.w says, through bt for a Batch) and c
			// from one loop callback, and drives the reactor.
			start := func(bt *Batch) {
				r.Immediate(func() {
					roots["a"].Execute()
					switch tc.w {
					case promise:
						p = roots["b"].Promise()
					case batch:
						bt.Add(roots["b"])
						bt.Execute()
					default:
						roots["b"].Execute()
					}
					roots["c"].Execute()
				})
				drive()
			}
			var bt Batch
			start(&bt)
			// Every step waits on its External now (but b's at "start").
			r.Immediate(func() {
				for i := range xs {
					if i == 1 {
						switch tc.how {
						case "start":
							continue
						case "cancel":
							roots["b"].Cancel() // cancelRoot's task ends it
							continue
						case "cancel-queued":
							xs[i].Success()
							roots["b"].Cancel() // queued, then canceled: batchStopped ends it
							continue
						}
					}
					xs[i].Success()
				}
			})
			drive()
			if len(escaped) != 0 {
				t.Fatalf("the OnEnd panic escaped to the reactor's panic handler: %v (runs %q)", escaped, seq)
			}
			code := ""
			switch tc.how {
			case "mid-batch", "start":
			case "mid-batch-failed":
				code = "Boom"
			default:
				code = Canceled
			}
			var want []string
			for _, n := range []string{"a", "b", "c"} {
				if n != "b" || tc.how != "start" {
					want = append(want, n+".step0")
				}
			}
			if tc.how == "start" {
				// a's Execute ran its first step at once (on the loop,
				// nothing ready ahead: CONTRACT.md, "Where a flow runs");
				// b, with no steps, ends at its start; then c runs.
				want = []string{"a.step0", "b.end:", "c.step0"}
			}
			switch tc.how {
			case "start":
				want = append(want, "a.end:", "c.end:")
			case "cancel":
				// b's cancel task runs after a's and c's steps are readied
				// by the same callback; RunReady runs them first.
				want = append(want, "a.end:", "c.end:", "b.end:"+code)
			default:
				want = append(want, "a.end:", "b.end:"+code, "c.end:")
			}
			if !reflect.DeepEqual(seq, want) {
				t.Fatalf("run 0: %q, want %q (each end once)", seq, want)
			}
			var err error
			switch tc.w {
			case promise:
				if !p.ended() {
					t.Fatal("run 0: b's Promise never ended")
				}
				_, err = p.Wait()
			case batch:
				bt.Wait()
				_, err = bt.Result(0)
			}
			if tc.w != plain {
				var e *Error
				if !errors.As(err, &e) || e.Code != InternalError || e.Info != boom.Error() {
					t.Fatalf("run 0: b's waiter got %v, want InternalError %q", err, boom.Error())
				}
			}
			st := roots["b"].State()
			var pe *PanicError
			if !errors.As(st.LastException, &pe) || pe.Value != boom || st.ErrorInfo != boom.Error() {
				t.Fatalf("run 0: b's LastException %v, ErrorInfo %q, want the OnEnd panic", st.LastException, st.ErrorInfo)
			}
			if s := StatsOf(r); s.FramesLive != 0 {
				t.Fatalf("run 0: %d frames live after every flow ended", s.FramesLive)
			}

			// Run 1: every root runs again, once, and b's OnEnd once.
			panicking = false
			seq = nil
			build(1)
			var bt2 Batch
			start(&bt2)
			want = []string{"a.step1", "a.end:", "b.step1", "b.end:", "c.step1", "c.end:"}
			if !reflect.DeepEqual(seq, want) || len(escaped) != 0 {
				t.Fatalf("run 1: %q, want %q (escaped %v)", seq, want, escaped)
			}
			switch tc.w {
			case promise:
				_, err = p.Wait()
			case batch:
				bt2.Wait()
				_, err = bt2.Result(0)
			}
			if err != nil {
				t.Fatalf("run 1: b's waiter got %v", err)
			}
			if s := StatsOf(r); s.FramesLive != 0 {
				t.Fatalf("run 1: %d frames live after every flow ended", s.FramesLive)
			}
		})
	}
}

// An OnEnd that ends its goroutine (runtime.Goexit: t.FailNow in it) in the
// middle of a batch still ends its run, once, as an InternalError: the
// Promise gets it before the goroutine ends, and the root runs again. The
// flows after it in the batch run once when the loop is next driven, as
// after a step's Goexit (TestRunBatchGoexitMidBatch).
func TestOnEndGoexitEndsTheRootOnce(t *testing.T) {
	r := reactor.NewManual()
	var seq []string
	exit := true
	a, b, c := New(r), New(r), New(r)
	X.OnEnd(b, func(_ *Steps, code string) {
		seq = append(seq, "b.end:"+code)
		if exit {
			runtime.Goexit()
		}
	})
	var xs [3]External
	for i, rt := range []*Steps{a, b, c} {
		rt.Add(func(as *Steps) {
			seq = append(seq, fmt.Sprint("step", i))
			xs[i] = as.External()
		})
	}
	var p *Promise
	r.Immediate(func() {
		a.Execute()
		p = b.Promise()
		c.Execute()
	})
	r.RunUntilIdle()
	r.Immediate(func() {
		for i := range xs {
			xs[i].Success()
		}
	})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		r.RunUntilIdle()
	}()
	<-exited
	if want := []string{"step0", "step1", "step2", "b.end:"}; !reflect.DeepEqual(seq, want) {
		t.Fatalf("before the exit: runs %q, want %q", seq, want)
	}
	if !p.ended() {
		t.Fatal("b's run did not end before its OnEnd's goroutine ended")
	}
	if _, err := p.Wait(); err == nil || err.(*Error).Code != InternalError {
		t.Fatalf("b's Promise got %v, want an InternalError", err)
	}
	r.RunUntilIdle() // c's completion, left by the exit
	exit = false
	seq = nil
	b.Add(func(*Steps) { seq = append(seq, "again") })
	r.Immediate(func() { p = b.Promise() })
	r.RunUntilIdle()
	if _, err := p.Wait(); err != nil || !reflect.DeepEqual(seq, []string{"again", "b.end:"}) {
		t.Fatalf("b run again: %q, Promise %v", seq, err)
	}
	if s := StatsOf(r); s.FramesLive != 0 {
		t.Fatalf("%d frames live after every flow ended", s.FramesLive)
	}
}

// Closing the reactor ends every running flow (closeAll); a panicking
// OnEnd of one of them is its run's InternalError and the close goes on:
// the flows after it end too, each once, and no Promise is left waiting.
func TestOnEndPanicOnCloseEndsEveryFlow(t *testing.T) {
	r := reactor.NewManual()
	var escaped []any
	r.SetPanicHandler(func(v any) { escaped = append(escaped, v) })
	var seq []string
	var ps []*Promise
	for _, n := range []string{"a", "b", "c"} {
		root := New(r)
		X.OnEnd(root, func(_ *Steps, code string) {
			seq = append(seq, n+".end:"+code)
			if n != "c" {
				panic(n + " boom")
			}
		})
		root.Add(func(as *Steps) { as.WaitExternal() })
		r.Immediate(func() { ps = append(ps, root.Promise()) })
	}
	r.RunUntilIdle()
	func() {
		defer func() {
			if v := recover(); v != nil {
				escaped = append(escaped, v)
			}
		}()
		r.Close()
	}()
	if len(escaped) != 0 || len(seq) != 3 {
		t.Fatalf("close: ends %q, escaped %v; want each flow ended once, nothing escaped", seq, escaped)
	}
	for i, p := range ps {
		if !p.ended() {
			t.Fatalf("flow %d's Promise never ended (ends %q)", i, seq)
		}
		_, err := p.Wait()
		want := InternalError
		if i == 2 {
			want = Canceled
		}
		if e, ok := err.(*Error); !ok || e.Code != want {
			t.Fatalf("flow %d's Promise got %v, want %s", i, err, want)
		}
	}
}

// An OnEnd that panics with nil in the middle of a batch ends its root once,
// as its InternalError, whatever GODEBUG's panicnil says (with panicnil=1
// recover returns nil, as for a Goexit: endOnEnd tells a panic by fn not
// returning, not by the value); the flows beside it end once, in order,
// and nothing escapes. The panicnil=1 half runs this test again in a child
// process.
func TestOnEndPanicNilEndsTheRootOnce(t *testing.T) {
	if os.Getenv("REVBUGS9_PANICNIL_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOnEndPanicNilEndsTheRootOnce$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "REVBUGS9_PANICNIL_CHILD=1", "GODEBUG=panicnil=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("GODEBUG=panicnil=1: %v\n%s", err, out)
		}
	}
	r := reactor.NewManual()
	var escaped []any
	r.SetPanicHandler(func(v any) { escaped = append(escaped, v) })
	var seq []string
	var xs [3]External
	var ps [3]*Promise
	for i, n := range []string{"a", "b", "c"} {
		root := New(r)
		X.OnEnd(root, func(_ *Steps, code string) {
			seq = append(seq, n+".end:"+code)
			if n == "b" {
				panic(nil)
			}
		})
		root.Add(func(as *Steps) { xs[i] = as.External() })
		r.Immediate(func() { ps[i] = root.Promise() })
	}
	r.RunUntilIdle()
	r.Immediate(func() {
		for i := range xs {
			xs[i].Success()
		}
	})
	func() {
		defer func() {
			if v := recover(); v != nil {
				escaped = append(escaped, v)
			}
		}()
		r.RunUntilIdle()
	}()
	if want := []string{"a.end:", "b.end:", "c.end:"}; !reflect.DeepEqual(seq, want) || len(escaped) != 0 {
		t.Fatalf("ends %q (escaped %v), want %q", seq, escaped, want)
	}
	for i, p := range ps {
		if !p.ended() {
			t.Fatalf("flow %d's Promise never ended", i)
		}
		_, err := p.Wait()
		var e *Error
		if i == 1 {
			if !errors.As(err, &e) || e.Code != InternalError {
				t.Fatalf("b's Promise got %v, want InternalError", err)
			}
		} else if err != nil {
			t.Fatalf("flow %d's Promise got %v", i, err)
		}
	}
	if s := StatsOf(r); s.FramesLive != 0 {
		t.Fatalf("%d frames live after every flow ended", s.FramesLive)
	}
}

// A step of flow A that executes an empty root B on the loop ends B inside
// A's callback (prepareStartSlow: no step to queue), so B's OnEnd runs with
// A's step current. A raise of A's step from there (asA.Error, or any
// misuse, which fails the running step: misuse raises on e.cur) unwinds
// through B's OnEnd. It is A's raise, not a panic of B's OnEnd: A fails with
// it, once, and B's run keeps its own outcome (success), with no
// LastException made of the engine's raise signal.
func TestOnEndRaiseOfTheCurrentStepIsNotTheRootsPanic(t *testing.T) {
	r := reactor.NewManual()
	var escaped []any
	r.SetPanicHandler(func(v any) { escaped = append(escaped, v) })
	a, b := New(r), New(r)
	var asA *Steps
	ends := 0
	X.OnEnd(b, func(_ *Steps, code string) {
		ends++
		asA.Error("Mine", "raised by A's step, from B's OnEnd")
	})
	var pB *Promise
	a.Add(func(as *Steps) {
		asA = as
		pB = b.Promise() // B has no step: it ends here, inside A's callback
	})
	var pA *Promise
	r.Immediate(func() { pA = a.Promise() })
	r.RunUntilIdle()
	if len(escaped) != 0 {
		t.Fatalf("escaped to the panic handler: %v", escaped)
	}
	if ends != 1 {
		t.Fatalf("B's OnEnd ran %d times, want 1", ends)
	}
	var e *Error
	if _, err := pA.Wait(); !errors.As(err, &e) || e.Code != "Mine" {
		t.Fatalf("A's Promise got %v, want its own raise Mine", err)
	}
	if _, err := pB.Wait(); err != nil {
		t.Fatalf("B's Promise got %v (LastException %v), want B's own success: the raise was A's", err, b.State().LastException)
	}
	if s := StatsOf(r); s.FramesLive != 0 {
		t.Fatalf("%d frames live after both flows ended", s.FramesLive)
	}
}

// An OnEnd that releases its root and then panics: the run ends once, as
// its InternalError (the Promise gets it), and the root is released once,
// after the end (RootsLive back where it was), with nothing left live.
func TestOnEndReleaseThenPanic(t *testing.T) {
	r := reactor.NewManual()
	var escaped []any
	r.SetPanicHandler(func(v any) { escaped = append(escaped, v) })
	before := StatsOf(r).RootsLive
	b := New(r)
	ends := 0
	X.OnEnd(b, func(root *Steps, _ string) {
		ends++
		root.Release()
		panic("after release")
	})
	b.Add(func(*Steps) {})
	var p *Promise
	r.Immediate(func() { p = b.Promise() })
	r.RunUntilIdle()
	if len(escaped) != 0 || ends != 1 {
		t.Fatalf("OnEnd ran %d times, escaped %v", ends, escaped)
	}
	var e *Error
	if _, err := p.Wait(); !errors.As(err, &e) || e.Code != InternalError || e.Info != "after release" {
		t.Fatalf("Promise got %v, want InternalError \"after release\"", err)
	}
	if !rootOf(b).isReleased() {
		t.Fatal("the root is still valid: OnEnd's Release was lost")
	}
	if s := StatsOf(r); s.RootsLive != before || s.FramesLive != 0 {
		t.Fatalf("RootsLive %d (before %d), FramesLive %d: released once, nothing live", s.RootsLive, before, s.FramesLive)
	}
	// The pool hands the root out again, whole.
	c := New(r)
	ran := false
	c.Add(func(*Steps) { ran = true })
	r.Immediate(func() { p = c.Promise() })
	r.RunUntilIdle()
	if _, err := p.Wait(); err != nil || !ran {
		t.Fatalf("a root from the pool after: ran %v, %v", ran, err)
	}
}
