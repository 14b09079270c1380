package bench

import (
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// Tests of our implementation of the scenarios, under both drivers: each
// result is right, and every path the benchmarks claim allocation-free
// allocates nothing once warm (testing.AllocsPerRun, as fasthttp asserts its
// own claims).

var drivers = []Driver{DriverLoop, DriverGoroutine}

// driven runs fn as driver d on r: inside a loop callback, or directly on
// the test goroutine. An error of the loop callback fails t.
func driven(t *testing.T, r *reactor.Reactor, d Driver, fn func()) {
	t.Helper()
	if d == DriverGoroutine {
		if r.IsSameThread() {
			t.Fatal("the test goroutine is the loop outside any drive")
		}
		fn()
		return
	}
	if err := onLoop(r, fn); err != nil {
		t.Fatal(err)
	}
}

// eachDriver runs test once per driver, as a subtest driver=loop or
// driver=goroutine.
func eachDriver(t *testing.T, test func(t *testing.T, d Driver)) {
	for _, d := range drivers {
		t.Run("driver="+d.String(), func(t *testing.T) { test(t, d) })
	}
}

func TestOnLoop(t *testing.T) {
	r := reactor.NewManual()
	var same, nestedRan bool
	if err := onLoop(r, func() {
		same = r.IsSameThread()
		// A loop callback drives its own manual reactor.
		r.Immediate(func() { nestedRan = true })
		r.RunUntilIdle()
	}); err != nil {
		t.Fatal(err)
	}
	if !same {
		t.Error("IsSameThread() is false inside the loop callback")
	}
	if !nestedRan {
		t.Error("a nested RunUntilIdle did not run an Immediate posted on the loop")
	}
	if r.IsSameThread() {
		t.Error("IsSameThread() is still true after the drive")
	}
	err := onLoop(r, func() { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("a panic on the loop gave %v, want an error mentioning it", err)
	}
}

func TestSimple(t *testing.T) {
	eachDriver(t, func(t *testing.T, d Driver) {
		s := newSimple()
		var a float64
		driven(t, s.r, d, func() {
			for range warmRounds {
				s.op()
			}
			s.ran = 0
			a = testing.AllocsPerRun(1000, s.op)
		})
		if a != 0 {
			t.Errorf("new root, one step, Execute, RunUntilIdle, Release: %v allocs, want 0", a)
		}
		if s.ran != 1001 { // AllocsPerRun runs op once more to warm up
			t.Errorf("%d steps ran, want 1001", s.ran)
		}
	})
}

func TestSequential(t *testing.T) {
	eachDriver(t, func(t *testing.T, d Driver) {
		s := newSequential()
		var a float64
		var err error
		driven(t, s.r, d, func() {
			for _, n := range []int{1, 2, 7, SequentialSteps - 1, SequentialSteps} {
				if err = s.round(n); err != nil {
					return
				}
			}
			a = testing.AllocsPerRun(20, func() {
				if e := s.round(SequentialSteps); e != nil {
					err = e
				}
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if a != 0 {
			t.Errorf("a round of %d steps on a reused root: %v allocs, want 0", SequentialSteps, a)
		}
	})
}

// warmBatchAllocs drives batch on r (as d drives it) with 1, 3,
// drainEvery+1 and twice ParallelFlows flows, then returns the
// allocations of a batch of ParallelFlows. Two full batches warm: roots
// are pooled FIFO behind a quarantine, and a root keeps the flow it took
// once it came from the pool (engine's keepFlow), so the roots the first
// full batch created fresh take their flows in the second. A batch that
// fails fails the test.
func warmBatchAllocs(t *testing.T, r *reactor.Reactor, d Driver, batch func(n int) error) float64 {
	t.Helper()
	var a float64
	var err error
	driven(t, r, d, func() {
		for _, n := range []int{1, 3, drainEvery + 1, ParallelFlows, ParallelFlows} {
			if err = batch(n); err != nil {
				return
			}
		}
		a = testing.AllocsPerRun(2, func() {
			if e := batch(ParallelFlows); e != nil {
				err = e
			}
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestParallel(t *testing.T) {
	eachDriver(t, func(t *testing.T, d Driver) {
		p := newParallel(d)
		a := warmBatchAllocs(t, p.r, d, p.batch)
		if a != 0 {
			t.Errorf("a batch of %d flows: %v allocs, want 0", ParallelFlows, a)
		}
	})
}

// TestParallelWrongDriver: a fixture refuses to run where its driver does
// not say, so a benchmark cannot silently measure the other path.
func TestParallelWrongDriver(t *testing.T) {
	p := newParallel(DriverLoop)
	if err := p.batch(1); err == nil {
		t.Error("a driver=loop batch ran off the loop")
	}
	p = newParallel(DriverGoroutine)
	var err error
	driven(t, p.r, DriverLoop, func() { err = p.batch(1) })
	if err == nil {
		t.Error("a driver=goroutine batch ran on the loop")
	}
}

func TestParallelWaitLoop(t *testing.T) {
	eachDriver(t, func(t *testing.T, d Driver) {
		w := newWaitLoop(d)
		var a float64
		var err error
		driven(t, w.r, d, func() {
			if err = w.start(); err != nil {
				return
			}
			for _, n := range []int{1, 5, ParallelFlows, ParallelFlows} {
				if err = w.round(n); err != nil {
					return
				}
			}
			a = testing.AllocsPerRun(3, func() {
				if e := w.round(ParallelFlows); e != nil {
					err = e
				}
			})
			if err == nil {
				err = w.close()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if a != 0 {
			t.Errorf("a round of %d loop iterations: %v allocs, want 0", ParallelFlows, a)
		}
	})
}

func TestTimeout(t *testing.T) {
	eachDriver(t, func(t *testing.T, d Driver) {
		f := newTimeout()
		var a float64
		var err error
		driven(t, f.r, d, func() {
			for range warmRounds {
				if err = f.op(); err != nil {
					return
				}
			}
			a = testing.AllocsPerRun(1000, func() {
				if e := f.op(); e != nil {
					err = e
				}
			})
			if err == nil {
				err = f.check()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if a != 0 {
			t.Errorf("SetTimeout + External.Success: %v allocs, want 0", a)
		}
	})
}
