package reactor

import (
	"fmt"
	"testing"
)

// A task of an overflow drain drives its manual reactor nested while the
// list is in use again: the nested drain must not write over the outer
// drain's batch, whose later tasks have not run yet. Before the fix both
// took r.overflow.batch, one backing array: the outer drain then ran the
// nested one's cleared slots (a nil callback's panic) in place of its own
// tasks, which were lost.
func TestOverflowDrainNestedKeepsTheOuterBatch(t *testing.T) {
	var panics []any
	r := newReactor(Options{CPU: -1, RingSize: 2, PanicHandler: func(v any) { panics = append(panics, v) }}, true)
	defer r.Close()
	ran := map[string]int{}
	rec := func(s string) func() { return func() { ran[s]++ } }
	post := func(name string, fn func()) {
		t.Helper()
		if _, ok := r.push(task{fn: fn, kind: taskImmediate}); !ok {
			t.Fatalf("%s refused", name)
		}
	}
	// Warm up: a drain of six leaves its batch's array for the next.
	for i := range 8 {
		post(fmt.Sprint("w", i), rec(fmt.Sprint("w", i)))
	}
	r.RunUntilIdle()
	if cap(r.overflow.batch) < 4 {
		t.Fatalf("the warm-up left a batch of cap %d; want >= 4", cap(r.overflow.batch))
	}
	post("a", rec("a"))
	post("b", rec("b")) // the ring of two is full
	post("t1", func() {
		ran["t1"]++
		for _, s := range []string{"c", "d", "e", "f", "g"} {
			post(s, rec(s)) // c, d in the ring; e, f, g in the list
		}
		r.RunUntilIdle() // nested: drains the ring and the list
	})
	post("t2", rec("t2"))
	post("t3", rec("t3"))
	r.RunUntilIdle()
	for _, s := range []string{"a", "b", "t1", "c", "d", "e", "f", "g", "t2", "t3"} {
		if ran[s] != 1 {
			t.Errorf("%s ran %d times, want once (all: %v)", s, ran[s], ran)
		}
	}
	if len(panics) != 0 {
		t.Errorf("panics: %v", panics)
	}
}
