package engine_test

import (
	"reflect"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A pooled root named after what it serves (SetFlowName: an extension
// that holds nothing but its name, as a server's request flow) executed on
// the loop: Execute starts it without the ready queue and runs its first
// turn at once when it is alone and outside any step, and queues it
// everywhere else, as for a plain root (TestExecuteOnLoop).
func TestExecuteOnLoopNamedRoot(t *testing.T) {
	name := engine.NewName("NAMED")
	cases := []struct {
		name string
		run  func(r *reactor.Reactor, named func() *engine.Steps, log *[]string)
		want []string
	}{
		{"alone: runs before Execute returns", func(r *reactor.Reactor, named func() *engine.Steps, log *[]string) {
			root := named()
			root.Add(func(*engine.Steps) { *log = append(*log, "a") })
			root.Add(func(*engine.Steps) { *log = append(*log, "b") })
			root.Execute()
			*log = append(*log, "returned")
			root.ReleaseAtEnd()
		}, []string{"a", "b", "returned"}},
		{"a flow ready ahead: queued behind it", func(r *reactor.Reactor, named func() *engine.Steps, log *[]string) {
			ahead := named()
			engine.X.DeferStart(ahead, true)
			ahead.Add(func(*engine.Steps) { *log = append(*log, "ahead") })
			ahead.Execute() // held back: queued, so ready ahead of root
			root := named()
			root.Add(func(*engine.Steps) { *log = append(*log, "root") })
			root.Execute()
			*log = append(*log, "returned")
			ahead.ReleaseAtEnd()
			root.ReleaseAtEnd()
		}, []string{"returned", "ahead", "root"}},
		{"inside a step: queued, runs after the step", func(r *reactor.Reactor, named func() *engine.Steps, log *[]string) {
			outer := named()
			outer.Add(func(*engine.Steps) {
				inner := named()
				inner.Add(func(*engine.Steps) { *log = append(*log, "inner") })
				inner.Execute()
				inner.ReleaseAtEnd()
				*log = append(*log, "outer step end")
			})
			outer.Execute()
			*log = append(*log, "returned")
			outer.ReleaseAtEnd()
		}, []string{"outer step end", "returned", "inner"}},
		{"held back with X.DeferStart: queued", func(r *reactor.Reactor, named func() *engine.Steps, log *[]string) {
			root := named()
			engine.X.DeferStart(root, true)
			root.Add(func(*engine.Steps) { *log = append(*log, "ran") })
			root.Execute()
			*log = append(*log, "returned")
			root.ReleaseAtEnd()
		}, []string{"returned", "ran"}},
		{"a panicking step: its flow's InternalError, Execute returns", func(r *reactor.Reactor, named func() *engine.Steps, log *[]string) {
			root := named()
			root.Add(func(*engine.Steps) { panic("boom") }, func(as *engine.Steps, code string) {
				*log = append(*log, "handler:"+code)
				as.Success()
			})
			root.Add(func(*engine.Steps) { *log = append(*log, "next") })
			root.Execute()
			*log = append(*log, "returned")
			root.ReleaseAtEnd()
		}, []string{"handler:" + engine.InternalError, "next", "returned"}},
		{"re-executed after its end, many times", func(r *reactor.Reactor, named func() *engine.Steps, log *[]string) {
			root := named()
			for i := 0; i < 100; i++ {
				root.Add(func(*engine.Steps) {})
				root.Execute()
				if root.Executing() {
					*log = append(*log, "still executing")
					break
				}
			}
			*log = append(*log, "done")
			root.Release()
		}, []string{"done"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reactor.NewManual()
			warmPool(r)
			named := func() *engine.Steps {
				root := engine.New(r)
				root.SetFlowName(name)
				return root
			}
			var log []string
			onLoopDo(r, func() { c.run(r, named, &log) })
			if !reflect.DeepEqual(log, c.want) {
				t.Fatalf("log %q, want %q", log, c.want)
			}
			if s := engine.StatsOf(r); s.FramesLive != 0 || s.RootsLive != 0 || s.FlowsLive != 0 {
				t.Fatalf("left behind: %+v", s)
			}
		})
	}
}
