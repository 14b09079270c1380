package engine

import (
	"fmt"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A loop iteration frame carries fBare (loopNext, and each reuse), so that
// reuseIteration and advanceFast decide a reuse from the frame's first
// line; its kept frames hang off its next. fBare must therefore be gone
// whenever the iteration holds a cancel or finally handler, Stack memory
// or a binding: an iteration that ended holding one is released, and the
// next starts on a frame holding nothing. Each case's first iteration
// takes one of those (or nothing) and ends plainly; the second parks; the
// root is then canceled. Checked at every iteration's start: fBare set,
// nothing held, x nil, at most one frame kept (one step added per
// iteration), and at the end no frame live. A handler of the first
// iteration must not run at the second's cancel: with the handler's
// clearing of fBare removed, the reused frame would carry it over.
func TestLoopIterationBare(t *testing.T) {
	for _, tc := range []struct {
		name string
		take func(as *Steps, ran *[]string)
	}{
		{"nothing", func(*Steps, *[]string) {}},
		{"SetCancel", func(as *Steps, ran *[]string) {
			as.SetCancel(func(*Steps) { *ran = append(*ran, "cancel of iteration 0") })
		}},
		{"SetFinally", func(as *Steps, ran *[]string) {
			as.SetFinally(func(*Steps) { *ran = append(*ran, "finally of iteration 0") })
		}},
		{"Stack", func(as *Steps, _ *[]string) { *Stack[[4]int](as) = [4]int{1, 2, 3, 4} }},
		{"External left stale", func(as *Steps, _ *[]string) { _ = as.External() }},
	} {
		for _, kind := range []string{"Loop", "Repeat"} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				r := reactor.NewManual()
				e := engineOf(r)
				root := New(r)
				var ran []string
				var wait External
				i := 0
				body := func(as *Steps) {
					held := !as.scope.Empty() || as.oncancel != nil || as.bin != nil
					kept := 0
					for c := as.next; c != nil; c = c.next {
						kept++
					}
					if as.flags != fBare || held || as.x != nil || kept > 1 {
						t.Errorf("iteration %d starts with flags %#x, something held %v, x %p, %d frames kept",
							i, as.flags, held, as.x, kept)
					}
					if i == 0 {
						tc.take(as, &ran)
						as.Add(func(*Steps) {})
					} else {
						as.Add(func(as *Steps) { wait = as.External() })
					}
					i++
				}
				if kind == "Loop" {
					root.Loop(body)
				} else {
					root.Repeat(5, func(as *Steps, _ int) { body(as) })
				}
				root.Execute()
				r.RunUntilIdle()
				if i != 2 || wait.f == nil {
					t.Fatalf("%d iterations ran, want 2 with the second waiting", i)
				}
				want := []string(nil)
				if tc.name == "SetFinally" {
					want = []string{"finally of iteration 0"} // at iteration 0's own end
				}
				if fmt.Sprint(ran) != fmt.Sprint(want) {
					t.Fatalf("before the cancel ran %v, want %v", ran, want)
				}
				root.Cancel()
				r.RunUntilIdle()
				if fmt.Sprint(ran) != fmt.Sprint(want) {
					t.Fatalf("after the cancel ran %v, want %v: a handler of the first iteration outlived it", ran, want)
				}
				root.Release()
				r.RunUntilIdle()
				if e.stats.FramesLive != 0 {
					t.Fatalf("%d frames live after the root ended", e.stats.FramesLive)
				}
			})
		}
	}
}
