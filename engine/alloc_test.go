package engine

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

func emptyStep(as *Steps) {}

func incStep(as *Steps) { as.Success(Int(as.Arg(0).Int() + 1)) }

// The zero-allocation claims of the engine, asserted exactly. Each scenario
// is warmed first so the pools hold what steady state needs.
func TestZeroAllocs(t *testing.T) {
	SkipIfDebug(t)
	r := reactor.NewManual()
	var slot External
	waitStep := func(as *Steps) { slot = as.External() }
	timeoutStep := func(as *Steps) {
		as.SetTimeout(time.Second)
		slot = as.External()
	}
	loopBody := func(as *Steps) { slot = as.External() }
	var loopRoot *Steps

	cases := []struct {
		name string
		run  func()
	}{
		{"simple", func() {
			root := New(r)
			root.Add(emptyStep)
			root.Execute()
			r.RunUntilIdle()
			root.Release()
		}},
		{"sequential/16", func() {
			root := New(r)
			for i := 0; i < 16; i++ {
				root.Add(incStep)
			}
			root.Execute()
			r.RunUntilIdle()
			root.Release()
		}},
		{"external", func() {
			root := New(r)
			root.Add(waitStep)
			root.Execute()
			r.RunUntilIdle()
			slot.Success(Int(1))
			r.RunUntilIdle()
			root.Release()
		}},
		{"timeout", func() {
			root := New(r)
			root.Add(timeoutStep)
			root.Execute()
			r.RunUntilIdle()
			slot.Success()
			r.RunUntilIdle()
			root.Release()
		}},
		{"parallel/4", func() {
			root := New(r)
			p := root.Parallel()
			for i := 0; i < 4; i++ {
				p.Add(emptyStep)
			}
			root.Execute()
			r.RunUntilIdle()
			root.Release()
		}},
		{"loop-iteration", func() {
			if loopRoot == nil {
				loopRoot = New(r)
				loopRoot.Loop(loopBody)
				loopRoot.Execute()
				r.RunUntilIdle()
			}
			slot.Success()
			r.RunUntilIdle()
		}},
		{"stack", func() {
			root := New(r)
			root.Add(func(as *Steps) {
				p := Stack[[4]int64](as)
				p[0] = 1
				q := Stack[*int](as)
				_ = q
			})
			root.Execute()
			r.RunUntilIdle()
			root.Release()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i := 0; i < 10; i++ {
				c.run()
			}
			if n := testing.AllocsPerRun(200, c.run); n != 0 {
				t.Fatalf("%v allocs per run, want 0", n)
			}
		})
	}
	if loopRoot != nil {
		loopRoot.Cancel()
		r.RunUntilIdle()
	}
	st := StatsOf(r)
	if st.FramesLive != 0 || st.FlowsLive != 0 {
		t.Fatalf("after all flows ended: %+v, want no live frames or flows", st)
	}
	if a := engineOf(r).ar.Stats(); a.ObjectsInUse != 0 {
		t.Fatalf("arena still holds %d objects", a.ObjectsInUse)
	}
}
