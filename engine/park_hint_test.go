package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// parked leaves each plain step that parks in the next of the step that
// parked parkAhead before it, and its flow in that step's flow's
// prevReady (unless that flow is queued), while that step still waits
// with the External it parked with, and nowhere else: a free frame's next
// links its free list, a kept frame's its iteration's list, a waiting
// iteration's (kBody) next heads its kept frames, a queued flow's
// prevReady links the ready queue, and a frame no longer waiting may be a
// root's, being built on another goroutine. The cases call parked on a
// step parkAhead back in each state; a hint written into any but the
// first two would cut a list or race.
func TestParkedHintOnlyIntoAWaitingStep(t *testing.T) {
	sentinel := &Steps{}
	sentinelFl := &flow{}
	const gen = 5
	const disarmed = gen << xBits // gen with xNone (0): no External armed
	for _, tc := range []struct {
		name   string
		kind   uint8
		ctl    uint64          // lp's ctl as it parks
		after  func(lp *Steps) // what happens to lp before f parks
		queued bool            // lp's flow is in the ready queue
		same   bool            // the step parkAhead before is f itself
		want   bool            // the step hint is written
		wantFl bool            // the flow hint is written
	}{
		{"waiting step", kStep, gen<<xBits | xArmed, nil, false, false, true, true},
		{"waiting step, flow queued", kStep, gen<<xBits | xArmed, nil, true, false, true, false},
		{"completed (Success's CAS)", kStep, gen<<xBits | xArmed, func(lp *Steps) { lp.ctl.Store(disarmed) }, false, false, false, false},
		{"canceled or destroyed (disarm)", kStep, gen<<xBits | xArmed, func(lp *Steps) { lp.disarm() }, false, false, false, false},
		{"reused and armed again", kStep, gen<<xBits | xArmed, func(lp *Steps) { lp.ctl.Store((gen+1)<<xBits | xArmed) }, false, false, false, false},
		{"completing off the loop", kStep, gen<<xBits | xArmed, func(lp *Steps) { lp.ctl.Store(gen<<xBits | xWriting) }, false, false, false, false},
		{"parked without an External", kStep, disarmed, nil, false, false, false, false},
		{"waiting iteration", kBody, gen<<xBits | xArmed, nil, false, false, false, false},
		{"the same step", kStep, gen<<xBits | xArmed, nil, false, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &engine{}
			lfl := &flow{queued: tc.queued, prevReady: sentinelFl}
			lp := &Steps{kind: tc.kind, st: stWaiting, next: sentinel, fl: lfl}
			lp.ctl.Store(tc.ctl)
			f := &Steps{kind: kStep, st: stWaiting, fl: &flow{}}
			f.ctl.Store(gen<<xBits | xArmed)
			if tc.same {
				f = lp
			}
			// lp parked parkAhead steps before f: its slot is the one
			// f takes. The steps between park without an External.
			e.parked(lp)
			for i := 1; i < parkAhead; i++ {
				e.parked(&Steps{kind: kStep, st: stWaiting, fl: &flow{}})
			}
			if tc.after != nil {
				tc.after(lp)
			}
			e.parked(f)
			if got := lp.next == f; got != tc.want {
				t.Errorf("step hint written: %v, want %v (next %p, f %p)", got, tc.want, lp.next, f)
			}
			if !tc.want && lp.next != sentinel {
				t.Errorf("next changed to %p: the list it linked is cut", lp.next)
			}
			if got := lfl.prevReady == f.fl; got != tc.wantFl {
				t.Errorf("flow hint written: %v, want %v", got, tc.wantFl)
			}
			if !tc.wantFl && lfl.prevReady != sentinelFl {
				t.Errorf("prevReady changed to %p: the queue it linked is cut", lfl.prevReady)
			}
			if slot := (e.parkAt - 1) & (parkAhead - 1); e.parkRing[slot] != f || e.parkCtl[slot] != f.ctl.Load() {
				t.Errorf("the ring's newest %p ctl %#x, want the step that parked %p", e.parkRing[slot], e.parkCtl[slot], f)
			}
		})
	}
	t.Run("fewer than parkAhead before", func(t *testing.T) {
		e := &engine{}
		f := &Steps{kind: kStep, st: stWaiting, fl: &flow{}}
		f.ctl.Store(gen<<xBits | xArmed)
		e.parked(f)
		if f.next != nil || f.fl.prevReady != nil {
			t.Errorf("next %p prevReady %p, want nil", f.next, f.fl.prevReady)
		}
	})
}

// Through the API: steps that park in turn carry the hints parkAhead
// apart, and completions in that order, in the reverse order, and with a
// waiting loop iteration among them all deliver their values; the
// iteration's kept frames survive the parks after it, the ready queue
// the hints left in prevReady, and nothing is left live.
func TestParkedHintThroughAPI(t *testing.T) {
	for _, order := range []string{"parked", "reverse"} {
		t.Run(order, func(t *testing.T) {
			r := reactor.NewManual()
			const n = parkAhead + 4
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
			// parkAhead more plain steps park after it.
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
			var lastXs []External
			var lasts []*Steps
			for range parkAhead {
				last := New(r)
				last.Add(func(as *Steps) { lastXs = append(lastXs, as.External()) })
				last.Execute()
				lasts = append(lasts, last)
			}
			r.RunUntilIdle()

			if len(parkedSteps) != n {
				t.Fatalf("%d steps parked, want %d", len(parkedSteps), n)
			}
			for i := 0; i+parkAhead < n; i++ {
				if parkedSteps[i].next != parkedSteps[i+parkAhead] {
					t.Errorf("step %d's hint %p, want step %d %p", i, parkedSteps[i].next, i+parkAhead, parkedSteps[i+parkAhead])
				}
				if parkedSteps[i].fl.prevReady != parkedSteps[i+parkAhead].fl {
					t.Errorf("flow %d's hint %p, want flow %d's %p", i, parkedSteps[i].fl.prevReady, i+parkAhead, parkedSteps[i+parkAhead].fl)
				}
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
				if !loopX.Success() {
					t.Errorf("the loop's Success refused")
				}
				for _, x := range lastXs {
					if !x.Success() {
						t.Errorf("a last step's Success refused")
					}
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
			all := append(append(roots, loopRoot, driver), lasts...)
			for _, rt := range all {
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
