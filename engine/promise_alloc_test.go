package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A call through a Promise that ends before Wait has to sleep (as an
// assisted or spun-for short flow does) allocates a slot of the reactor's
// Promise slab only: promiseSlabN calls in a row, wherever the first one
// falls in a slab, make exactly one allocation. Its Done channel is made
// only when Done is called or Wait parks.
func TestAllocPromiseWithoutDone(t *testing.T) {
	SkipIfDebug(t) // released roots are never reused there
	r := reactor.NewManual()
	step := func(as *Steps) { as.Success(Int(1)) }
	call := func() {
		root := New(r)
		root.Add(step)
		p := root.Promise()
		r.RunUntilIdle()
		if args, err := p.Wait(); err != nil || args.At(0).Int() != 1 {
			t.Fatalf("%v %v", args, err)
		}
		root.Release()
	}
	call()
	calls := func() {
		for range promiseSlabN {
			call()
		}
	}
	if n := exactAllocs(50, calls); n != 50 {
		t.Fatalf("%v allocations over 50 x %d calls, want 50 (a Promise slab each %d)", n, promiseSlabN, promiseSlabN)
	}
	// Done after the end: the shared closed channel, no allocation.
	root := New(r)
	root.Add(step)
	p := root.Promise()
	r.RunUntilIdle()
	if n := testing.AllocsPerRun(10, func() { <-p.Done() }); n != 0 {
		t.Fatalf("Done after the end allocated %v", n)
	}
	root.Release()
}

// A Batch allocates nothing once its slices have grown: a set of flows
// added, executed, waited for and released costs no allocation per flow
// and none per set.
func TestAllocBatch(t *testing.T) {
	SkipIfDebug(t) // released roots are never reused there
	r := reactor.NewManual()
	step := func(as *Steps) { as.Success(Int(1)) }
	roots := make([]*Steps, 64)
	var b Batch
	set := func() {
		for i := range roots {
			roots[i] = New(r)
			roots[i].Add(step)
			b.Add(roots[i])
		}
		b.Execute()
		r.RunUntilIdle()
		b.Wait()
		for i := range roots {
			if args, err := b.Result(i); err != nil || args.At(0).Int() != 1 {
				t.Fatalf("%v %v", args, err)
			}
			roots[i].Release()
		}
	}
	set()
	set()
	if n := testing.AllocsPerRun(50, set); n != 0 {
		t.Fatalf("%v allocations per set of %d flows, want 0", n, len(roots))
	}
}

// exactAllocs is the number of allocations runs calls of f make in all
// (after one call to warm up). testing.AllocsPerRun divides its count by
// its runs and drops the remainder, so "1 per run" there holds for
// anything from runs to 2*runs-1 allocations; a count per a whole slab's
// worth of flows needs the total.
func exactAllocs(runs int, f func()) float64 {
	return testing.AllocsPerRun(1, func() {
		for range runs {
			f()
		}
	})
}
