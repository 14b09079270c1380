package engine_test

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// The start of a root executed on the loop (CONTRACT.md, "Where a flow
// runs"): from a loop callback, outside any step and any handler the
// engine runs, with no flow of the reactor ready ahead of it, Execute runs
// the flow's first turn before it returns; everywhere else it queues the
// flow, as before.

// onLoopDo runs fn as a callback of r's loop and drives r until idle.
func onLoopDo(r *reactor.Reactor, fn func()) {
	r.Immediate(fn)
	r.RunUntilIdle()
}

func TestExecuteOnLoop(t *testing.T) {
	cases := []struct {
		name string
		// run builds and executes flows from a loop callback, appending to
		// log; want is the log after the loop is idle again.
		run  func(t *testing.T, r *reactor.Reactor, log *[]string)
		want []string
	}{
		{"runs its first turn before Execute returns", func(t *testing.T, r *reactor.Reactor, log *[]string) {
			root := engine.New(r)
			root.Add(func(as *engine.Steps) {
				if !r.IsSameThread() || !r.IsLoopGoroutine() {
					t.Error("a step run by Execute is not on the loop")
				}
				*log = append(*log, "a")
			})
			root.Add(func(as *engine.Steps) { *log = append(*log, "b") })
			root.Execute()
			*log = append(*log, "returned")
			if root.Executing() {
				t.Error("still executing after Execute ran both steps")
			}
			root.Release()
		}, []string{"a", "b", "returned"}},
		{"stops at a wait; the rest runs in a later turn", func(t *testing.T, r *reactor.Reactor, log *[]string) {
			root := engine.New(r)
			var ext engine.External
			root.Add(func(as *engine.Steps) {
				*log = append(*log, "wait")
				ext = as.External()
			})
			root.Add(func(as *engine.Steps) { *log = append(*log, "after") })
			root.Execute()
			*log = append(*log, "returned")
			if !root.Executing() {
				t.Error("not executing while its step waits")
			}
			ext.Success() // on the loop: queued, runs after this callback
			*log = append(*log, "completed")
			root.ReleaseAtEnd()
		}, []string{"wait", "returned", "completed", "after"}},
		{"roots executed one after another start in order", func(t *testing.T, r *reactor.Reactor, log *[]string) {
			for _, n := range []string{"1", "2", "3"} {
				root := engine.New(r)
				root.Add(func(as *engine.Steps) { *log = append(*log, n) })
				root.Execute()
				root.ReleaseAtEnd()
			}
		}, []string{"1", "2", "3"}},
		{"a flow ready ahead runs first: queued behind it", func(t *testing.T, r *reactor.Reactor, log *[]string) {
			ahead := engine.New(r)
			var ext engine.External
			ahead.Add(func(as *engine.Steps) { ext = as.External() })
			ahead.Add(func(as *engine.Steps) { *log = append(*log, "ahead") })
			ahead.Execute()
			ext.Success() // ahead is ready again: queued
			root := engine.New(r)
			root.Add(func(as *engine.Steps) { *log = append(*log, "root") })
			root.Execute()
			*log = append(*log, "returned")
			ahead.ReleaseAtEnd()
			root.ReleaseAtEnd()
		}, []string{"returned", "ahead", "root"}},
		{"executed inside a step: queued, runs after the step", func(t *testing.T, r *reactor.Reactor, log *[]string) {
			inner := engine.New(r)
			inner.Add(func(as *engine.Steps) { *log = append(*log, "inner") })
			outer := engine.New(r)
			outer.Add(func(as *engine.Steps) {
				inner.Execute()
				*log = append(*log, "outer step end")
			})
			outer.Add(func(as *engine.Steps) { *log = append(*log, "outer 2") })
			outer.Execute()
			*log = append(*log, "returned")
			inner.ReleaseAtEnd()
			outer.ReleaseAtEnd()
		}, []string{"outer step end", "outer 2", "returned", "inner"}},
		{"executed inside OnEnd: queued", func(t *testing.T, r *reactor.Reactor, log *[]string) {
			next := engine.New(r)
			next.Add(func(as *engine.Steps) { *log = append(*log, "next") })
			first := engine.New(r)
			first.Add(func(as *engine.Steps) { *log = append(*log, "first") })
			engine.X.OnEnd(first, func(*engine.Steps, string) {
				next.Execute()
				*log = append(*log, "onend")
			})
			first.Execute()
			*log = append(*log, "returned")
			next.ReleaseAtEnd()
			first.ReleaseAtEnd()
		}, []string{"first", "onend", "returned", "next"}},
		{"executed inside a cancel handler: queued", func(t *testing.T, r *reactor.Reactor, log *[]string) {
			next := engine.New(r)
			next.Add(func(as *engine.Steps) { *log = append(*log, "next") })
			first := engine.New(r)
			first.Add(func(as *engine.Steps) {
				as.SetCancel(func(*engine.Steps) {
					next.Execute()
					*log = append(*log, "handler")
					next.ReleaseAtEnd()
				})
				as.WaitExternal()
			})
			first.Execute()
			first.Cancel() // the handler runs in a later turn
			*log = append(*log, "returned")
			first.ReleaseAtEnd()
		}, []string{"returned", "handler", "next"}},
		{"held back with X.DeferStart: queued", func(t *testing.T, r *reactor.Reactor, log *[]string) {
			root := engine.New(r)
			engine.X.DeferStart(root, true)
			root.Add(func(as *engine.Steps) { *log = append(*log, "root") })
			root.Execute()
			*log = append(*log, "returned")
			root.Release() // canceled before its first step
			engine.X.DeferStart(root, false)
		}, []string{"returned"}},
		{"a panicking step: its flow's InternalError, Execute returns", func(t *testing.T, r *reactor.Reactor, log *[]string) {
			root := engine.New(r)
			root.Add(func(as *engine.Steps) { panic("pow") }, func(as *engine.Steps, code string) {
				*log = append(*log, "handler:"+code)
			})
			root.Execute()
			*log = append(*log, "returned")
			if st := root.State(); st.LastException == nil || !strings.Contains(st.LastException.Error(), "pow") {
				t.Errorf("the panic is not the flow's error: %v", st.LastException)
			}
			root.Release()
		}, []string{"handler:" + engine.InternalError, "returned"}},
		{"an unhandled error reaches the end before Execute returns", func(t *testing.T, r *reactor.Reactor, log *[]string) {
			root := engine.New(r)
			root.Add(func(as *engine.Steps) { as.Error("Boom", "") })
			engine.X.OnEnd(root, func(_ *engine.Steps, code string) { *log = append(*log, "end:"+code) })
			root.Execute()
			*log = append(*log, "returned")
			root.Release()
		}, []string{"end:Boom", "returned"}},
		{"Release after Execute: an ended flow's root goes back at once", func(t *testing.T, r *reactor.Reactor, log *[]string) {
			root := engine.New(r)
			root.Add(func(as *engine.Steps) { *log = append(*log, "ran") })
			root.Execute()
			ref := root.Ref()
			root.Release()
			if ref.Valid() {
				t.Error("a root whose flow ended inside Execute is still valid after Release")
			}
		}, []string{"ran"}},
		{"Release after Execute: a waiting flow is canceled", func(t *testing.T, r *reactor.Reactor, log *[]string) {
			root := engine.New(r)
			root.Add(func(as *engine.Steps) {
				as.SetCancel(func(*engine.Steps) { *log = append(*log, "canceled") })
				as.WaitExternal()
			})
			root.Execute()
			root.Release()
		}, []string{"canceled"}},
		{"Release inside its own step", func(t *testing.T, r *reactor.Reactor, log *[]string) {
			root := engine.New(r)
			root.Add(func(as *engine.Steps) {
				root.Release() // released once its flow has ended (RootsLive 0 below)
				*log = append(*log, "step")
			})
			root.Execute()
			*log = append(*log, "returned")
		}, []string{"step", "returned"}},
		{"a timer set by the first step fires later", func(t *testing.T, r *reactor.Reactor, log *[]string) {
			root := engine.New(r)
			root.Add(func(as *engine.Steps) {
				as.SetTimeout(time.Millisecond)
				as.WaitExternal()
			}, func(as *engine.Steps, code string) { *log = append(*log, "err:"+code) })
			root.Execute()
			*log = append(*log, "returned")
			root.ReleaseAtEnd()
		}, []string{"returned", "err:" + engine.Timeout}},
	}
	for _, c := range cases {
		for _, pooled := range []bool{false, true} {
			name := c.name
			if pooled {
				name += ", pooled roots"
			}
			t.Run(name, func(t *testing.T) {
				r := reactor.NewManual()
				if pooled {
					warmPool(r)
				}
				var log []string
				onLoopDo(r, func() { c.run(t, r, &log) })
				r.Advance(time.Second) // the virtual clock: a timer set by a step fires
				if !reflect.DeepEqual(log, c.want) {
					t.Fatalf("log %q, want %q", log, c.want)
				}
				if s := engine.StatsOf(r); s.FramesLive != 0 || s.RootsLive != 0 || s.FlowsLive != 0 {
					t.Fatalf("left behind: %+v", s)
				}
			})
		}
	}
}

// warmPool cycles roots through r's loop pool past its quarantine: from
// then on New on the loop hands out roots that keep their flow between
// runs, which Execute starts on its short path (root.go).
// Sixteen at a time, so that a case's second and third New find a pooled
// root too (the pool holds the last 8 released back).
func warmPool(r *reactor.Reactor) {
	onLoopDo(r, func() {
		var roots [16]*engine.Steps
		for range 4 {
			for i := range roots {
				roots[i] = engine.New(r)
				roots[i].Add(func(*engine.Steps) {})
				roots[i].Execute()
			}
			for _, root := range roots {
				root.Release()
			}
		}
	})
}

// A flow that never waits does not keep Execute from returning: it runs one
// turn's budget of steps inside Execute, then is queued like any flow past
// its budget, and the caller goes on (here, to cancel it).
func TestExecuteOnLoopEndlessFlowReturns(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	iterations := 0
	root.Add(func(as *engine.Steps) {
		as.Loop(func(as *engine.Steps) { iterations++ })
	})
	var inside int
	ended := ""
	engine.X.OnEnd(root, func(_ *engine.Steps, code string) { ended = code })
	onLoopDo(r, func() {
		root.Execute()
		inside = iterations
		root.Cancel()
	})
	if inside == 0 {
		t.Fatal("Execute ran none of the loop's iterations")
	}
	if root.Executing() {
		t.Fatal("still executing after its cancel")
	}
	if ended != engine.Canceled {
		t.Fatalf("ended with %q, want %s", ended, engine.Canceled)
	}
	root.Release()
}

// Promise executes as Execute does: on the loop, a flow that ends inside it
// has its result at once (Wait does not panic), and Wait on the loop for a
// flow that has not ended still panics (it would deadlock).
func TestExecuteOnLoopPromise(t *testing.T) {
	r := reactor.NewManual()
	onLoopDo(r, func() {
		root := engine.New(r)
		root.Add(func(as *engine.Steps) { as.Success(engine.Int(7)) })
		args, err := root.Promise().Wait()
		if err != nil || args.Len() != 1 || args.At(0).Int() != 7 {
			t.Errorf("Wait = %v, %v; want 7", args, err)
		}
		root.Release()

		waiting := engine.New(r)
		waiting.Add(func(as *engine.Steps) { as.WaitExternal() })
		p := waiting.Promise()
		func() {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(v.(string), "Promise.Wait on the loop") {
					t.Errorf("Wait on the loop for a waiting flow: recovered %v, want the misuse panic", v)
				}
			}()
			p.Wait()
		}()
		waiting.Release() // cancels it
	})
	if s := engine.StatsOf(r); s.RootsLive != 0 || s.FramesLive != 0 {
		t.Fatalf("left behind: %+v", s)
	}
}

// Off the loop nothing changes: Execute from the goroutine that drives an
// idle manual reactor queues the flow, which runs in the next drive.
func TestExecuteOffLoopStaysQueued(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	ran := false
	root.Add(func(as *engine.Steps) { ran = true })
	root.Execute()
	if ran {
		t.Fatal("Execute off the loop ran the step before the reactor was driven")
	}
	r.RunUntilIdle()
	if !ran || root.Executing() {
		t.Fatalf("after the drive: ran %v, executing %v", ran, root.Executing())
	}
	root.Release()
}

// A step that ends its goroutine (runtime.Goexit, t.FailNow) inside the
// turn Execute runs ends that goroutine's drive there, as in any turn: the
// loop is given back, nothing of the exited flow runs on the unwinding,
// and the next Execute on the loop runs its flow at once.
func TestExecuteOnLoopGoexit(t *testing.T) {
	r := reactor.NewManual()
	var log []string
	exiting := engine.New(r)
	exiting.Add(func(*engine.Steps) {
		log = append(log, "exit")
		runtime.Goexit()
	})
	exiting.Add(func(*engine.Steps) { log = append(log, "never") })
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		onLoopDo(r, func() {
			exiting.Execute()
			log = append(log, "never")
		})
	}()
	<-exited
	onLoopDo(r, func() {
		next := engine.New(r)
		next.Add(func(*engine.Steps) { log = append(log, "next") })
		next.Execute()
		log = append(log, "returned")
		next.Release()
	})
	if want := []string{"exit", "next", "returned"}; !reflect.DeepEqual(log, want) {
		t.Fatalf("log %q, want %q", log, want)
	}
}
