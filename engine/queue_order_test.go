package engine_test

import (
	"fmt"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// The sub-step queue (a circular list held by its last frame, Steps.head)
// through the public API: for each number of queued steps, sub-steps run
// in the order added, a parallel step's branches start in the order added,
// CopyFrom copies a queue (its parallel's branches included) in order and
// leaves the model's queue as it was, and a cancel with steps still queued
// gives every frame back.
func TestQueueOrderThroughAPI(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			r := reactor.NewManual()
			var log logger
			var want []string

			root := engine.New(r)
			root.Add(func(as *engine.Steps) {
				for i := range n {
					as.Add(log.fn(fmt.Sprint("sub", i)))
				}
				p := as.Parallel()
				for i := range n {
					p.Add(log.fn(fmt.Sprint("branch", i)))
				}
			})
			for i := range n {
				want = append(want, fmt.Sprint("sub", i))
			}
			for i := range n {
				want = append(want, fmt.Sprint("branch", i))
			}
			_, err := runFlow(t, r, root)
			wantNoErr(t, err)
			log.check(t, want...)

			// A model built off the loop, copied twice into one root.
			log.lines = nil
			model := engine.New(r)
			for i := range n {
				model.Add(log.fn(fmt.Sprint("m", i)))
			}
			mp := model.Parallel()
			for i := range n {
				mp.Add(log.fn(fmt.Sprint("mb", i)))
			}
			target := engine.New(r)
			target.CopyFrom(model)
			target.CopyFrom(model)
			var once []string
			for i := range n {
				once = append(once, fmt.Sprint("m", i))
			}
			for i := range n {
				once = append(once, fmt.Sprint("mb", i))
			}
			_, err = runFlow(t, r, target)
			wantNoErr(t, err)
			log.check(t, append(append([]string{}, once...), once...)...)
			log.lines = nil
			_, err = runFlow(t, r, model)
			wantNoErr(t, err)
			log.check(t, once...)

			// Cancel while the first sub-step waits and n more are queued.
			log.lines = nil
			var x engine.External
			c := engine.New(r)
			c.Add(func(as *engine.Steps) {
				as.Add(func(as *engine.Steps) { x = as.External() })
				for i := range n {
					as.Add(log.fn(fmt.Sprint("never", i)))
				}
			})
			c.Execute()
			r.RunUntilIdle()
			c.Cancel()
			r.RunUntilIdle()
			if x.Success() {
				t.Fatal("External.Success after Cancel reported true")
			}
			r.RunUntilIdle()
			log.check(t)
			for _, rt := range []*engine.Steps{root, model, target, c} {
				rt.Release()
			}
			if st := engine.StatsOf(r); st.FramesLive != 0 {
				t.Fatalf("%d frames live after every root ended", st.FramesLive)
			}
		})
	}
}
