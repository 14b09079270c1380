package engine

import (
	"slices"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A Loop's iteration carries the loop's body in its fn (loopNext), so that
// run and reuseIteration need not read the loop's state; a Repeat's or a
// ForEach's iteration has fn nil (run then calls through the loop's state,
// which passes the index). A frame given back loses its fn: were it kept,
// a Repeat's iteration on that memory would run the Loop's body.
func TestLoopIterationFn(t *testing.T) {
	r := reactor.NewManual()
	e := engineOf(r)
	root := New(r)
	n := 0
	var loopFn, repFn, eachFn []bool
	var reps, each []int
	root.Loop(func(as *Steps) {
		loopFn = append(loopFn, as.fn != nil)
		as.Add(func(as *Steps) {
			if n++; n == 3 {
				as.Break()
			}
		})
	})
	root.Repeat(3, func(as *Steps, i int) {
		repFn = append(repFn, as.fn != nil)
		reps = append(reps, i)
	})
	root.Add(func(as *Steps) {
		ForEach(as, []int{7, 8}, func(as *Steps, i int, v int) {
			eachFn = append(eachFn, as.fn != nil)
			each = append(each, i)
		})
	})
	outcome := "running"
	xOnEnd(root, func(_ *Steps, code string) { outcome = code })
	root.Execute()
	r.RunUntilIdle()
	if outcome != "" {
		t.Fatalf("outcome %q, want success", outcome)
	}
	if !slices.Equal(loopFn, []bool{true, true, true}) {
		t.Errorf("a Loop's iterations had fn set: %v, want every one", loopFn)
	}
	if !slices.Equal(repFn, []bool{false, false, false}) || !slices.Equal(reps, []int{0, 1, 2}) {
		t.Errorf("Repeat's iterations: fn set %v, indices %v; want no fn and 0 1 2", repFn, reps)
	}
	if !slices.Equal(eachFn, []bool{false, false}) || !slices.Equal(each, []int{0, 1}) {
		t.Errorf("ForEach's iterations: fn set %v, indices %v; want no fn and 0 1", eachFn, each)
	}
	for f := e.free; f != nil; f = f.next {
		if f.fn != nil {
			t.Fatalf("a free frame (kind %d) keeps its fn", f.kind)
		}
	}
	for f := rootOf(root).spare; f != nil; f = f.next {
		if f.fn != nil {
			t.Fatalf("a spare frame (kind %d) keeps its fn", f.kind)
		}
	}
	root.Release()
}
