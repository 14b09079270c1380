package bench

import "testing"

// The C++-shaped fixtures: right results under both drivers (also under
// -race, at small sizes), and no allocation once warm at full size
// (TestCppAllocs, which `make allocs` runs without the race detector).

func TestCppParallel(t *testing.T) {
	eachDriver(t, func(t *testing.T, d Driver) {
		p := newCppParallel(d)
		var err error
		driven(t, p.r, d, func() {
			for _, n := range []int{1, 3, drainEvery + 1} {
				if err = p.batch(n); err != nil {
					return
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestCppWaitLoop(t *testing.T) {
	eachDriver(t, func(t *testing.T, d Driver) {
		w := newCppWaitLoop(d)
		var err error
		driven(t, w.r, d, func() {
			if err = w.start(); err != nil {
				return
			}
			// Fewer than, exactly and more than one round of the flows:
			// the ones left parked go first next time.
			for _, n := range []int{1, 7, ParallelFlows, ParallelFlows + 5} {
				if err = w.run(n); err != nil {
					return
				}
			}
			err = w.close()
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestCppAllocs: a full Parallel batch and a ParallelWaitLoop run of more
// than one round allocate nothing once the pools are warm.
func TestCppAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are checked without -race (make allocs)")
	}
	eachDriver(t, func(t *testing.T, d Driver) {
		p := newCppParallel(d)
		a := warmBatchAllocs(t, p.r, d, p.batch)
		if a != 0 {
			t.Errorf("Parallel: a batch of %d two-step flows: %v allocs, want 0", ParallelFlows, a)
		}

		var err error
		w := newCppWaitLoop(d)
		driven(t, w.r, d, func() {
			if err = w.start(); err != nil {
				return
			}
			if err = w.run(2 * ParallelFlows); err != nil {
				return
			}
			a = testing.AllocsPerRun(2, func() {
				if e := w.run(ParallelFlows + 3); e != nil {
					err = e
				}
			})
		})
		if err == nil {
			driven(t, w.r, d, func() { err = w.close() })
		}
		if err != nil {
			t.Fatal(err)
		}
		if a != 0 {
			t.Errorf("ParallelWaitLoop: %d iterations: %v allocs, want 0", ParallelFlows+3, a)
		}
	})
}

func TestEmptyIteration(t *testing.T) {
	eachDriver(t, func(t *testing.T, d Driver) {
		f := newEmptyIter()
		var a float64
		driven(t, f.r, d, func() {
			for range warmRounds {
				f.r.RunUntilIdle()
			}
			a = testing.AllocsPerRun(1000, f.r.RunUntilIdle)
		})
		if a != 0 {
			t.Errorf("RunUntilIdle on an idle reactor: %v allocs, want 0", a)
		}
	})
}

func TestCppWrongDriver(t *testing.T) {
	p := newCppParallel(DriverLoop)
	if err := p.batch(1); err == nil {
		t.Error("a driver=loop Parallel batch ran off the loop")
	}
	w := newCppWaitLoop(DriverLoop)
	if err := w.start(); err == nil {
		t.Error("a driver=loop ParallelWaitLoop started off the loop")
	}
}
