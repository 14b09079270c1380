//go:build asyncsteps_debug

package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// In the asyncsteps_debug build a released root is never
// handed out again, and every call on a kept pointer to it panics with the
// call's name, while Ref stays the exact, quiet way.
func TestDebugReleasedRootPanicsWithItsName(t *testing.T) {
	r := reactor.NewManual()
	nop := func(as *engine.Steps) {}
	calls := []struct {
		name string
		call func(root *engine.Steps)
	}{
		{"Add", func(root *engine.Steps) { root.Add(nop) }},
		{"Parallel", func(root *engine.Steps) { root.Parallel() }},
		{"Loop", func(root *engine.Steps) { root.Loop(nop) }},
		{"Repeat", func(root *engine.Steps) { root.Repeat(1, func(*engine.Steps, int) {}) }},
		{"SuccessStep", func(root *engine.Steps) { root.SuccessStep() }},
		{"Execute", func(root *engine.Steps) { root.Execute() }},
		{"Promise", func(root *engine.Steps) { root.Promise() }},
		{"Cancel", func(root *engine.Steps) { root.Cancel() }},
		{"Release", func(root *engine.Steps) { root.Release() }},
		{"ReleaseAtEnd", func(root *engine.Steps) { root.ReleaseAtEnd() }},
		{"Executing", func(root *engine.Steps) { root.Executing() }},
		{"Valid", func(root *engine.Steps) { root.Valid() }},
		{"Ref", func(root *engine.Steps) { root.Ref() }},
		{"State", func(root *engine.Steps) { root.State() }},
		{"State", func(root *engine.Steps) { root.Set("k", 1) }},
		{"SetFlowName", func(root *engine.Steps) { root.SetName("x") }},
		{"FlowName", func(root *engine.Steps) { root.FlowName() }},
		{"SetContext", func(root *engine.Steps) { root.SetContext(context.Background()) }},
		{"Context", func(root *engine.Steps) { root.Context() }},
		{"CopyFrom", func(root *engine.Steps) { root.CopyFrom(engine.New(r)) }},
		{"Clone", func(root *engine.Steps) { root.Clone() }},
		{"NewInstance", func(root *engine.Steps) { root.NewInstance() }},
		{"RootID", func(root *engine.Steps) { root.RootID() }},
		{"Success", func(root *engine.Steps) { root.Success() }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			root := engine.New(r)
			root.Add(nop)
			root.Execute()
			r.RunUntilIdle()
			ref := root.Ref()
			root.Release()
			if ref.Valid() || ref.Cancel() {
				t.Fatal("a Ref of a released root is valid") // and it must not panic
			}
			defer func() {
				msg, _ := recover().(string)
				want := "engine: " + c.name
				if !strings.HasPrefix(msg, want) || !strings.HasSuffix(msg, " on a released root") {
					t.Fatalf("panic %q, want %q... on a released root", msg, want)
				}
			}()
			c.call(root)
		})
	}
}

func TestDebugReleasedRootIsNeverReused(t *testing.T) {
	r := reactor.NewManual()
	released := map[*engine.Steps]bool{}
	for i := 0; i < 200; i++ {
		root := engine.New(r)
		if released[root] {
			t.Fatalf("New %d handed out a released root again", i)
		}
		root.Add(func(as *engine.Steps) {})
		root.Execute()
		r.RunUntilIdle()
		if i%2 == 0 {
			root.Release()
		} else {
			root.ReleaseAtEnd()
		}
		released[root] = true
	}
	if st := engine.StatsOf(r); st.RootsLive != 0 {
		t.Fatalf("RootsLive %d after every root was released", st.RootsLive)
	}
}
