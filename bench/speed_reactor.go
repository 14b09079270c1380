package bench

import (
	"fmt"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// --- Turn: the reactor's own cost per callback ---
//
// The C++ reference's "Immediate + RunUntilIdle with an empty callback":
// schedule one callback and run the loop until it is idle again. Under
// driver=goroutine the benchmark goroutine posts from outside the loop and
// then drives it (the ring, the drive CAS); under driver=loop the same two
// calls are made from inside a loop callback, where Immediate is local work
// and RunUntilIdle nests.

type turnFixture struct {
	r   *reactor.Reactor
	fn  func()
	ran int
}

func newTurn() *turnFixture {
	t := &turnFixture{r: reactor.NewManual()}
	t.fn = func() { t.ran++ }
	// The engine attached, as on every reactor that runs flows: the turn
	// then also asks the engine's runner for ready flows.
	engine.New(t.r).Release()
	return t
}

// bench makes the two calls in its own loop, as the C++ program does
// (`at.immediate(cb); at.iterate();`): a helper holding them would not
// inline (two calls are over the inliner's budget) and would add a frame
// of the fixture's to every turn (~10 Ir of the Turn row).
func (t *turnFixture) bench(b *testing.B) error {
	r, fn := t.r, t.fn
	for range warmRounds {
		r.Immediate(fn)
		r.RunUntilIdle()
	}
	t.ran = 0
	b.ResetTimer()
	for range b.N {
		r.Immediate(fn)
		r.RunUntilIdle()
	}
	b.StopTimer()
	if t.ran != b.N {
		return fmt.Errorf("Turn: %d of %d callbacks ran", t.ran, b.N)
	}
	return nil
}

// Turn: r.Immediate(empty callback) and r.RunUntilIdle from the benchmark
// goroutine, which drives the manual reactor (driver=goroutine). b.N
// counts turns.
func Turn(b *testing.B) {
	t := newTurn()
	runDriven(b, "Turn", t.r, DriverGoroutine, func() error { return t.bench(b) })
}

// TurnOnLoop: Turn from inside a loop callback (driver=loop): the callback
// is posted on the loop and RunUntilIdle nests.
func TurnOnLoop(b *testing.B) {
	t := newTurn()
	runDriven(b, "Turn", t.r, DriverLoop, func() error { return t.bench(b) })
}

// benchLoop is bench through a reactor.Loop made in the loop callback
// (driver=loopctx): l.Immediate and l.RunUntilIdle, which compare the
// loop word with the Loop's goroutine instead of asking the runtime for
// the caller's identity.
func (t *turnFixture) benchLoop(b *testing.B) error {
	l, ok := t.r.Loop()
	if !ok {
		return fmt.Errorf("Turn: reactor.Loop() off the loop")
	}
	fn := t.fn
	for range warmRounds {
		l.Immediate(fn)
		l.RunUntilIdle()
	}
	t.ran = 0
	b.ResetTimer()
	for range b.N {
		l.Immediate(fn)
		l.RunUntilIdle()
	}
	b.StopTimer()
	if t.ran != b.N {
		return fmt.Errorf("Turn: %d of %d callbacks ran", t.ran, b.N)
	}
	return nil
}

// TurnLoopCtx: TurnOnLoop through the loop callback's reactor.Loop
// (driver=loopctx): l.Immediate(empty callback) and l.RunUntilIdle.
func TurnLoopCtx(b *testing.B) {
	t := newTurn()
	runDriven(b, "Turn", t.r, DriverLoop, func() error { return t.benchLoop(b) })
}

// --- EmptyIteration: a loop iteration that finds nothing to do ---
//
// The C++ reference's AsyncTool::iterate() on an idle tool (the C++
// reference table's "empty loop iteration", profiles/cppref): r.RunUntilIdle with nothing queued, on
// a reactor with the engine attached (the iteration also asks the engine's
// runner for ready flows). Under driver=loop the call nests in a loop
// callback; under driver=goroutine the benchmark goroutine takes the loop
// and gives it back each time.

type emptyIterFixture struct {
	r *reactor.Reactor
}

func newEmptyIter() *emptyIterFixture {
	f := &emptyIterFixture{r: reactor.NewManual()}
	engine.New(f.r).Release() // the engine attached, as on every reactor that runs flows
	return f
}

func (f *emptyIterFixture) bench(b *testing.B) error {
	for range warmRounds {
		f.r.RunUntilIdle()
	}
	b.ResetTimer()
	for range b.N {
		f.r.RunUntilIdle()
	}
	b.StopTimer()
	if st := engine.StatsOf(f.r); st.FramesLive != 0 {
		return fmt.Errorf("EmptyIteration: %d step frames live on an idle reactor", st.FramesLive)
	}
	return nil
}

// benchLoop is bench through a reactor.Loop made in the loop callback
// (driver=loopctx).
func (f *emptyIterFixture) benchLoop(b *testing.B) error {
	l, ok := f.r.Loop()
	if !ok {
		return fmt.Errorf("EmptyIteration: reactor.Loop() off the loop")
	}
	for range warmRounds {
		l.RunUntilIdle()
	}
	b.ResetTimer()
	for range b.N {
		l.RunUntilIdle()
	}
	b.StopTimer()
	if st := engine.StatsOf(f.r); st.FramesLive != 0 {
		return fmt.Errorf("EmptyIteration: %d step frames live on an idle reactor", st.FramesLive)
	}
	return nil
}

// EmptyIteration: r.RunUntilIdle on an idle manual reactor from the
// benchmark goroutine (driver=goroutine). b.N counts iterations.
func EmptyIteration(b *testing.B) {
	f := newEmptyIter()
	runDriven(b, "EmptyIteration", f.r, DriverGoroutine, func() error { return f.bench(b) })
}

// EmptyIterationOnLoop: EmptyIteration from inside a loop callback
// (driver=loop): the nested RunUntilIdle finds nothing queued.
func EmptyIterationOnLoop(b *testing.B) {
	f := newEmptyIter()
	runDriven(b, "EmptyIteration", f.r, DriverLoop, func() error { return f.bench(b) })
}

// EmptyIterationLoopCtx: EmptyIterationOnLoop through the loop callback's
// reactor.Loop (driver=loopctx): the nested l.RunUntilIdle finds nothing
// queued.
func EmptyIterationLoopCtx(b *testing.B) {
	f := newEmptyIter()
	runDriven(b, "EmptyIteration", f.r, DriverLoop, func() error { return f.benchLoop(b) })
}
