package bench

import "testing"

// Tests of our implementation of the scenarios: each result is right, and
// every path the benchmarks claim allocation-free allocates nothing once
// warm (testing.AllocsPerRun, as fasthttp asserts its own claims).

func TestSimple(t *testing.T) {
	s := newSimple()
	for range warmRounds {
		s.op()
	}
	s.ran = 0
	if a := testing.AllocsPerRun(1000, s.op); a != 0 {
		t.Errorf("new root, one step, Execute, RunUntilIdle, Release: %v allocs, want 0", a)
	}
	if s.ran != 1001 { // AllocsPerRun runs op once more to warm up
		t.Errorf("%d steps ran, want 1001", s.ran)
	}
}

func TestSequential(t *testing.T) {
	s := newSequential()
	for _, n := range []int{1, 2, 7, SequentialSteps - 1, SequentialSteps} {
		if err := s.round(n); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	a := testing.AllocsPerRun(20, func() {
		if e := s.round(SequentialSteps); e != nil {
			err = e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if a != 0 {
		t.Errorf("a round of %d steps on a reused root: %v allocs, want 0", SequentialSteps, a)
	}
}

func TestParallel(t *testing.T) {
	p := newParallel()
	for _, n := range []int{1, 3, drainEvery + 1, ParallelFlows} {
		if err := p.batch(n); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	a := testing.AllocsPerRun(2, func() {
		if e := p.batch(ParallelFlows); e != nil {
			err = e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if a != 0 {
		t.Errorf("a batch of %d flows: %v allocs, want 0", ParallelFlows, a)
	}
}

func TestParallelWaitLoop(t *testing.T) {
	w, err := newWaitLoop()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 5, ParallelFlows, ParallelFlows} {
		if err := w.round(n); err != nil {
			t.Fatal(err)
		}
	}
	a := testing.AllocsPerRun(3, func() {
		if e := w.round(ParallelFlows); e != nil {
			err = e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if a != 0 {
		t.Errorf("a round of %d loop iterations: %v allocs, want 0", ParallelFlows, a)
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
}

func TestTimeout(t *testing.T) {
	f := newTimeout()
	for range warmRounds {
		if err := f.op(); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	a := testing.AllocsPerRun(1000, func() {
		if e := f.op(); e != nil {
			err = e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if a != 0 {
		t.Errorf("SetTimeout + External.Success: %v allocs, want 0", a)
	}
	if err := f.check(); err != nil {
		t.Fatal(err)
	}
}
