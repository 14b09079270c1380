package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// parked leaves each plain step that parks in the next of the step that
// parked before it, while that one still waits, and nowhere else: a
// waiting kStep's next is free, but a free frame's next links its free
// list, a kept frame's its iteration's list, and a waiting iteration's
// (kBody) next heads its kept frames. The cases call parked directly on
// frames in each state; a hint written into any but the first would cut
// a list.
func TestParkedHintOnlyIntoAWaitingStep(t *testing.T) {
	sentinel := &Steps{}
	for _, tc := range []struct {
		name     string
		kind, st uint8
		same     bool // the last step to park parks again
		want     bool // the hint is written
	}{
		{"waiting step", kStep, stWaiting, false, true},
		{"free frame", kStep, stFree, false, false},
		{"queued step", kStep, stQueued, false, false},
		{"running step", kStep, stRunning, false, false},
		{"waiting iteration", kBody, stWaiting, false, false},
		{"waiting loop", kLoop, stWaiting, false, false},
		{"the same step", kStep, stWaiting, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &engine{}
			lp := &Steps{kind: tc.kind, st: tc.st, next: sentinel}
			f := &Steps{kind: kStep, st: stWaiting}
			if tc.same {
				f = lp
			}
			e.lastPark = lp
			e.parked(f)
			if got := lp.next == f; got != tc.want {
				t.Errorf("hint written: %v, want %v (next %p, f %p)", got, tc.want, lp.next, f)
			}
			if !tc.want && lp.next != sentinel {
				t.Errorf("next changed to %p: the list it linked is cut", lp.next)
			}
			if e.lastPark != f {
				t.Errorf("lastPark %p, want the step that parked %p", e.lastPark, f)
			}
		})
	}
	t.Run("none before", func(t *testing.T) {
		e := &engine{}
		f := &Steps{kind: kStep, st: stWaiting}
		e.parked(f)
		if e.lastPark != f || f.next != nil {
			t.Errorf("lastPark %p next %p, want %p and nil", e.lastPark, f.next, f)
		}
	})
}

// Through the API: steps that park in turn carry the hints in order, and
// completions in that order, in the reverse order, and with a waiting
// loop iteration among them all deliver their values; the iteration's
// kept frames survive the parks after it, and nothing is left live.
func TestParkedHintThroughAPI(t *testing.T) {
	for _, order := range []string{"parked", "reverse"} {
		t.Run(order, func(t *testing.T) {
			r := reactor.NewManual()
			e := engineOf(r)
			const n = 5
			var xs []External
			var parkedSteps []*Steps
			got := make([]int64, n)
			roots := make([]*Steps, n)
			for i := range roots {
				i := i
				roots[i] = New(r)
				roots[i].Add(func(as *Steps) {
					parkedSteps = append(parkedSteps, as)
					xs = append(xs, as.External())
				})
				roots[i].Add(func(as *Steps) { got[i] = as.Arg(0).Int() })
				roots[i].Execute()
			}
			// A loop whose iteration parks itself (a kBody waiting), then
			// one more plain step parks after it.
			iters := 0
			var loopX External
			loopRoot := New(r)
			loopRoot.Loop(func(as *Steps) {
				iters++
				if iters > 2 {
					as.Break()
					return
				}
				loopX = as.External()
			})
			loopRoot.Execute()
			var lastX External
			last := New(r)
			last.Add(func(as *Steps) { lastX = as.External() })
			last.Execute()
			r.RunUntilIdle()

			if len(parkedSteps) != n {
				t.Fatalf("%d steps parked, want %d", len(parkedSteps), n)
			}
			for i := 0; i < n-1; i++ {
				if parkedSteps[i].next != parkedSteps[i+1] {
					t.Errorf("step %d's hint %p, want step %d %p", i, parkedSteps[i].next, i+1, parkedSteps[i+1])
				}
			}
			if e.lastPark != lastX.f {
				t.Errorf("lastPark %p, want the last step to park %p", e.lastPark, lastX.f)
			}
			// The driver: a flow on the loop completes every step.
			idx := make([]int, n)
			for i := range idx {
				idx[i] = i
				if order == "reverse" {
					idx[i] = n - 1 - i
				}
			}
			driver := New(r)
			driver.Add(func(as *Steps) {
				for _, i := range idx {
					if !xs[i].Success(Int(int64(10 + i))) {
						t.Errorf("Success of step %d refused", i)
					}
				}
				if !loopX.Success() || !lastX.Success() {
					t.Errorf("the loop's or the last step's Success refused")
				}
			})
			driver.Execute()
			r.RunUntilIdle()
			for i, v := range got {
				if v != int64(10+i) {
					t.Errorf("flow %d consumed %d, want %d", i, v, 10+i)
				}
			}
			// The loop went on from its waiting iteration and parked
			// again; complete it so that it breaks.
			if iters != 2 {
				t.Fatalf("%d iterations, want 2", iters)
			}
			if !loopX.Success() {
				t.Fatal("the second iteration's Success refused")
			}
			r.RunUntilIdle()
			if iters != 3 {
				t.Errorf("%d iterations, want 3 (the third breaks)", iters)
			}
			for _, rt := range append(append(roots, loopRoot, last), driver) {
				if err := rt.State().LastException; err != nil {
					t.Errorf("a root failed: %v", err)
				}
				rt.Release()
			}
			if st := StatsOf(r); st.FramesLive != 0 {
				t.Errorf("%d frames live at the end", st.FramesLive)
			}
		})
	}
}

// prefetchTurns reads only pointers of flows in the ready queue, and a
// flow may have none of them set (nil cur, root or next): no load through
// a nil pointer.
func TestPrefetchTurnsNilFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		n1   *flow
	}{
		{"all nil", &flow{}},
		{"cur only", &flow{cur: &Steps{}}},
		{"next and root", &flow{nextReady: &flow{}, root: &root{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefetchTurns(tc.n1) // must not panic
		})
	}
}
