package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A flow whose waiting step took parked's hint (prevReady: the flow of
// the step that parked parkAhead after it) normally loses it when the
// step completes: ready writes prevReady as it queues the flow. A flow
// that ends without being queued again keeps it, and a pool then keeps
// the hinted flow (and its root) from the GC for as long as it pools the
// flow: a branch flow canceled while it waits (cancelBranches: the
// branch pool is never trimmed), a root flow whose run is canceled
// (cancelRoot ends the run in place). Each case parks the flow's step,
// then parkAhead steps of other roots, checks the hint was written, ends
// the flow by a cancel, and wants no hint left in the flow.
func TestParkedHintClearedWhenAWaitingFlowIsCanceled(t *testing.T) {
	for _, tc := range []struct {
		name string
		// build adds to rt a step that parks; it reports the parked
		// step's accessor through *parked.
		build func(rt *Steps, parked **Steps)
	}{
		{"root flow", func(rt *Steps, parked **Steps) {
			rt.Add(func(as *Steps) { *parked = as; as.External() })
		}},
		{"branch flow", func(rt *Steps, parked **Steps) {
			rt.Add(func(as *Steps) {
				p := as.Parallel()
				p.Add(func(as *Steps) { *parked = as; as.External() })
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := reactor.NewManual()
			e := engineOf(r)
			var lp *Steps
			rt := New(r)
			tc.build(rt, &lp)
			rt.Execute()
			r.RunUntilIdle()
			if lp == nil {
				t.Fatal("the step did not park")
			}
			lfl := lp.fl
			var others []*Steps
			var last *Steps
			for range parkAhead {
				o := New(r)
				o.Add(func(as *Steps) { last = as; as.External() })
				o.Execute()
				others = append(others, o)
			}
			r.RunUntilIdle()
			if lfl.prevReady == nil || lfl.prevReady != last.fl {
				t.Fatalf("precondition: the flow's hint %p, want the last parked flow %p", lfl.prevReady, last.fl)
			}
			rt.Cancel()
			r.RunUntilIdle()
			if lfl.prevReady != nil {
				t.Errorf("the canceled flow still holds the hint %p: its pool keeps that flow from the GC", lfl.prevReady)
			}
			for fl := e.freeFlows; fl != nil; fl = fl.nextBranch {
				if fl.prevReady != nil {
					t.Errorf("a pooled branch flow holds a hint %p", fl.prevReady)
				}
			}
			for fl := e.freeRootFlows; fl != nil; fl = fl.nextBranch {
				if fl.prevReady != nil {
					t.Errorf("a pooled root flow holds a hint %p", fl.prevReady)
				}
			}
			for _, o := range others {
				o.Cancel()
			}
			r.RunUntilIdle()
			for _, o := range append(others, rt) {
				o.Release()
			}
			if st := StatsOf(r); st.FramesLive != 0 {
				t.Errorf("%d frames live at the end", st.FramesLive)
			}
		})
	}
}
