package bench

import (
	"fmt"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Parallel and ParallelWaitLoop in the C++ reference's own shapes
// (core-cpp-ri-asyncsteps, bench/futoin_asyncsteps.bench.cpp and
// futoin_nitrosteps.bench.cpp, Parallel_bench and ParallelWaitLoop_bench):
// every flow has two steps, the first parks on an external completion
// (waitExternal there, as.External() here) and the second consumes the int
// the completion passes (success(1) there, External.Success(Int(1)) here).
// The one-step rows of earlier tables are kept as ParallelOneStep and
// ParallelWaitLoopOneStep (asyncsteps.go).

// --- Parallel (C++ shape) ---

// cppParallelFixture is Parallel_bench: batches of ParallelFlows flows; each
// flow is started and the loop iterated once (the step parks), then every
// parked step is completed with Int(1) and the loop run until idle; the
// second steps subtract what they received from remaining, which must end
// at zero.
type cppParallelFixture struct {
	r         *reactor.Reactor
	d         Driver
	roots     []*engine.Steps
	waiting   []engine.External
	remaining int64
	park      engine.ExecFunc
	consume   engine.ExecFunc
}

func newCppParallel(d Driver) *cppParallelFixture {
	p := &cppParallelFixture{
		r:       reactor.NewManual(),
		d:       d,
		roots:   make([]*engine.Steps, 0, ParallelFlows),
		waiting: make([]engine.External, 0, ParallelFlows),
	}
	p.park = func(as *engine.Steps) { p.waiting = append(p.waiting, as.External()) }
	p.consume = func(as *engine.Steps) { p.remaining -= as.Arg(0).Int() }
	return p
}

// one is the success value every parked step receives; a package variable
// so that the variadic Success call builds no slice per call.
var one = [1]engine.Value{engine.Int(1)}

// batch is one outer round of Parallel_bench with n flows (n ≤
// ParallelFlows). Under driver=goroutine Execute and Success are posted to
// the ring (the loop is run after every Execute, as the reference iterates
// after every execute, and every drainEvery completions).
func (p *cppParallelFixture) batch(n int) error {
	if err := where(p.r, p.d); err != nil {
		return err
	}
	p.roots, p.waiting = p.roots[:0], p.waiting[:0]
	p.remaining = int64(n)
	for range n {
		root := engine.New(p.r)
		root.Add(p.park)
		root.Add(p.consume)
		root.Execute()
		p.r.RunUntilIdle()
		p.roots = append(p.roots, root)
	}
	if len(p.waiting) != n {
		return fmt.Errorf("Parallel: %d of %d flows parked", len(p.waiting), n)
	}
	drain := p.d == DriverGoroutine
	for i, x := range p.waiting {
		if !x.Success(one[:]...) {
			return fmt.Errorf("Parallel: External.Success of flow %d of %d reported false", i, n)
		}
		if drain && (i+1)%drainEvery == 0 {
			p.r.RunUntilIdle()
		}
	}
	p.r.RunUntilIdle()
	if p.remaining != 0 {
		return fmt.Errorf("Parallel: remaining is %d after %d flows consumed their value, want 0", p.remaining, n)
	}
	if st := engine.StatsOf(p.r); st.FramesLive != 0 {
		return fmt.Errorf("Parallel: %d step frames still live after all %d flows ended", st.FramesLive, n)
	}
	for _, root := range p.roots {
		root.Release()
	}
	return nil
}

func (p *cppParallelFixture) bench(b *testing.B) error {
	return benchBatches(b, p.batch)
}

// Parallel: the C++ reference's Parallel_bench, driven from the benchmark
// goroutine (driver=goroutine). b.N counts flows.
func Parallel(b *testing.B) {
	p := newCppParallel(DriverGoroutine)
	runDriven(b, "Parallel", p.r, p.d, func() error { return p.bench(b) })
}

// ParallelOnLoop: Parallel with the whole benchmark inside a loop callback
// (driver=loop), where the reference runs it.
func ParallelOnLoop(b *testing.B) {
	p := newCppParallel(DriverLoop)
	runDriven(b, "Parallel", p.r, p.d, func() error { return p.bench(b) })
}

// --- ParallelWaitLoop (C++ shape) ---

// cppWaitLoopFixture is ParallelWaitLoop_bench: ParallelFlows flows, each a
// Loop whose body adds the two steps (park, consume); a driver flow, itself
// a Loop on the same reactor, completes every parked step with Int(1) and
// yields (its step waits and an Immediate callback completes it), until
// the wanted number of iterations has been handed out.
//
// The reference's driver completes every parked step each round and stops
// once remaining ≤ 0, so it may overshoot by up to a round; this one hands
// out at most what is left, so b.N iterations are exactly b.N (the steps
// it does not complete this round stay parked, first in line next round).
type cppWaitLoopFixture struct {
	r       *reactor.Reactor
	d       Driver
	roots   []*engine.Steps
	driver  *engine.Steps
	waiting []engine.External // parked steps, oldest first
	next    []engine.External // spare buffer: waiting's successor each round

	issued, want int64 // completions handed out, and how many to hand out
	consumed     int64 // values the consume steps received
	stop         bool  // consume steps Break their loop

	body, park, consume engine.ExecFunc
	drive, driveLoop    engine.ExecFunc
	yield               engine.External // the driver's parked step
	resume              func()          // completes yield: the Immediate of the reference's yield
}

func newCppWaitLoop(d Driver) *cppWaitLoopFixture {
	w := &cppWaitLoopFixture{
		r:       reactor.NewManual(),
		d:       d,
		roots:   make([]*engine.Steps, ParallelFlows),
		waiting: make([]engine.External, 0, ParallelFlows),
		next:    make([]engine.External, 0, ParallelFlows),
	}
	w.park = func(as *engine.Steps) { w.waiting = append(w.waiting, as.External()) }
	w.consume = func(as *engine.Steps) {
		w.consumed += as.Arg(0).Int()
		if w.stop {
			as.Break()
		}
	}
	w.body = func(as *engine.Steps) {
		as.Add(w.park)
		as.Add(w.consume)
	}
	w.drive = func(as *engine.Steps) {
		if w.issued >= w.want {
			as.Break()
		}
		k := int(min(int64(len(w.waiting)), w.want-w.issued))
		for _, x := range w.waiting[:k] {
			if x.Success(one[:]...) {
				w.issued++
			}
		}
		// Those not completed this round stay first in line.
		w.next = append(w.next[:0], w.waiting[k:]...)
		w.waiting, w.next = w.next, w.waiting
		w.yield = as.External()
		w.r.Immediate(w.resume)
	}
	w.resume = func() { w.yield.Success() }
	// The driver's Loop is added by its first step, on the loop: a Loop
	// added to a root before Execute takes its state from the heap (the
	// arena is the loop's), one allocation per run.
	w.driveLoop = func(as *engine.Steps) { as.Loop(w.drive) }
	return w
}

// start starts the ParallelFlows looping flows; each parks in its first
// iteration.
func (w *cppWaitLoopFixture) start() error {
	if err := where(w.r, w.d); err != nil {
		return err
	}
	for i := range w.roots {
		root := engine.New(w.r)
		root.Loop(w.body)
		root.Execute()
		w.roots[i] = root
		if w.d == DriverGoroutine && (i+1)%drainEvery == 0 {
			w.r.RunUntilIdle()
		}
	}
	w.r.RunUntilIdle()
	if len(w.waiting) != len(w.roots) {
		return fmt.Errorf("ParallelWaitLoop: %d of %d flows parked after start", len(w.waiting), len(w.roots))
	}
	return nil
}

// run hands out n more iterations through a driver flow and runs the loop
// until the driver has broken its loop and every completed step has been
// consumed (and its flow parked again).
func (w *cppWaitLoopFixture) run(n int) error {
	w.want += int64(n)
	if w.driver == nil {
		w.driver = engine.New(w.r)
	}
	w.driver.Add(w.driveLoop)
	w.driver.Execute()
	w.r.RunUntilIdle()
	if w.issued != w.want || w.consumed != w.want {
		return fmt.Errorf("ParallelWaitLoop: %d completions handed out and %d consumed, want %d", w.issued, w.consumed, w.want)
	}
	return nil
}

// close breaks every flow's loop and releases the roots.
func (w *cppWaitLoopFixture) close() error {
	w.stop = true
	if err := w.run(len(w.waiting)); err != nil {
		return err
	}
	if len(w.waiting) != 0 {
		return fmt.Errorf("ParallelWaitLoop: %d steps still parked after every loop broke", len(w.waiting))
	}
	if st := engine.StatsOf(w.r); st.FramesLive != 0 {
		return fmt.Errorf("ParallelWaitLoop: %d step frames still live after every loop broke", st.FramesLive)
	}
	for _, root := range w.roots {
		root.Release()
	}
	w.driver.Release()
	return nil
}

func (w *cppWaitLoopFixture) bench(b *testing.B) error {
	if err := w.start(); err != nil {
		return err
	}
	if err := w.run(2 * ParallelFlows); err != nil {
		return err
	}
	b.ResetTimer()
	if err := w.run(b.N); err != nil {
		return err
	}
	b.StopTimer()
	reportPer(b, "iter")
	return w.close()
}

// ParallelWaitLoop: the C++ reference's ParallelWaitLoop_bench, with the
// flows and the driver flow started from the benchmark goroutine, which
// then runs the loop (driver=goroutine). b.N counts iterations.
func ParallelWaitLoop(b *testing.B) {
	w := newCppWaitLoop(DriverGoroutine)
	runDriven(b, "ParallelWaitLoop", w.r, w.d, func() error { return w.bench(b) })
}

// ParallelWaitLoopOnLoop: ParallelWaitLoop with the whole benchmark inside
// a loop callback (driver=loop), where the reference runs it.
func ParallelWaitLoopOnLoop(b *testing.B) {
	w := newCppWaitLoop(DriverLoop)
	runDriven(b, "ParallelWaitLoop", w.r, w.d, func() error { return w.bench(b) })
}
