package bench

import (
	"fmt"
	"runtime/debug"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// This file is our implementation of every scenario (impl=asyncsteps).
//
// Each scenario is a fixture (setup, one operation, teardown) on its own
// reactor.NewManual, so that the benchmarks and the zero-allocation tests in
// asyncsteps_test.go run the same code. Every fixture is driven two ways,
// with the same operation code:
//
//   - driver=goroutine (Simple, Sequential, ...): the benchmark goroutine
//     calls the operation between drives of the reactor, i.e. off the loop.
//     engine.New and Release take the root pool's mutex, Execute and
//     External.Success post to the reactor's MPSC submission ring, and every
//     RunUntilIdle takes the loop (the CAS that makes its caller the loop
//     goroutine) and gives it back.
//   - driver=loop (SimpleOnLoop, SequentialOnLoop, ...): the whole
//     benchmark body (setup, warm-up, timed loop, checks) runs inside one
//     r.Immediate callback, on the loop (r.IsSameThread() is true), as the
//     C++ reference benchmarks run everything on the AsyncTool's thread and
//     as a server's own flows are created and driven by its loop. New and
//     Release use the loop-local pool, Execute runs the flow's first turn
//     itself when no flow is ready ahead of it (else queues it on the
//     engine's ready queue), External.Success applies at once, and the
//     operation runs what is left with a nested r.RunUntilIdle (a
//     callback may drive its own manual reactor). The callback runs on the
//     benchmark goroutine (a manual reactor has no thread of its own), so
//     b.ResetTimer and b.StopTimer are called from inside it.

// drainEvery bounds how many tasks the benchmark goroutine posts to the
// reactor between two drives (driver=goroutine only: on the loop nothing is
// posted). A post to a full submission ring waits for the
// loop to free a slot (reactor's contract: backpressure, not loss); on a
// manual reactor the benchmark goroutine is the loop, so posting more than
// the ring holds without driving it would wait forever. 30,000 flows need
// more posts than reactor.DefaultRingSize.
const drainEvery = reactor.DefaultRingSize / 4

// onLoop runs fn on r's loop: posted with r.Immediate from the calling
// goroutine, which then runs the loop (r.RunUntilIdle) and so runs fn
// itself. Inside fn, r.IsSameThread() is true. It reports an error if fn
// did not run on the loop, or panicked (the reactor contains a callback's
// panic, so it is caught here and reported with its stack).
func onLoop(r *reactor.Reactor, fn func()) (err error) {
	ran, same := false, false
	r.Immediate(func() {
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("panic on the loop: %v\n%s", v, debug.Stack())
			}
		}()
		ran, same = true, r.IsSameThread()
		fn()
	})
	r.RunUntilIdle()
	switch {
	case err != nil:
		return err
	case !ran:
		return fmt.Errorf("the loop callback did not run")
	case !same:
		return fmt.Errorf("the loop callback ran with IsSameThread() == false")
	}
	return nil
}

// Driver says where a benchmark body runs: DriverGoroutine on the benchmark
// goroutine between drives of the reactor (off the loop), DriverLoop inside a
// callback of the reactor (on the loop).
type Driver bool

// The two drivers.
const (
	DriverGoroutine Driver = false // off the loop: pays the root-pool lock, the ring and the drive CAS
	DriverLoop      Driver = true  // on the loop: the C++ reference's setup
)

// String is the driver's name in sub-benchmark names (driver=loop).
func (d Driver) String() string {
	if d == DriverLoop {
		return "loop"
	}
	return "goroutine"
}

// runDriven runs body, a whole benchmark (setup, warm-up, b.ResetTimer, the
// timed loop, b.StopTimer, checks), as driver d on r, and fails b if body
// reports an error or did not run where d says.
func runDriven(b *testing.B, name string, r *reactor.Reactor, d Driver, body func() error) {
	b.ReportAllocs()
	var err error
	switch {
	case d == DriverLoop:
		if lerr := onLoop(r, func() { err = body() }); lerr != nil {
			err = fmt.Errorf("%s: %v", name, lerr)
		}
	case r.IsSameThread():
		err = fmt.Errorf("%s: the benchmark goroutine is the loop outside any drive", name)
	default:
		err = body()
	}
	if err != nil {
		fatalf(b, "driver=%v: %v", d, err)
	}
}

// where checks, once per batch or round, that a fixture runs where its
// driver says: New, Execute and External.Success choose their path by it.
func where(r *reactor.Reactor, d Driver) error {
	if r.IsSameThread() != bool(d) {
		return fmt.Errorf("IsSameThread() = %v under driver=%v", r.IsSameThread(), d)
	}
	return nil
}

// --- Simple ---

type simpleFixture struct {
	r    *reactor.Reactor
	step engine.ExecFunc
	ran  int
}

func newSimple() *simpleFixture {
	s := &simpleFixture{r: reactor.NewManual()}
	s.step = func(*engine.Steps) { s.ran++ }
	return s
}

// op is one whole flow: a root from the pool, one empty step, Execute, run
// until idle, Release. The same code under both drivers: on the loop, New
// and Release use the loop-local pool, Execute runs the flow at once (its
// step, its end) and RunUntilIdle, nested in the driver's callback, finds
// the loop idle.
func (s *simpleFixture) op() {
	root := engine.New(s.r)
	root.Add(s.step)
	root.Execute()
	s.r.RunUntilIdle()
	root.Release()
}

func (s *simpleFixture) bench(b *testing.B) error {
	for range warmRounds {
		s.op()
	}
	s.ran = 0
	b.ResetTimer()
	for range b.N {
		s.op()
	}
	b.StopTimer()
	if s.ran != b.N {
		return fmt.Errorf("Simple: %d of %d steps ran", s.ran, b.N)
	}
	return nil
}

// Simple: engine.New on a warm manual reactor, one empty step, Execute,
// r.RunUntilIdle, root.Release, from the benchmark goroutine
// (driver=goroutine). b.N counts flows.
func Simple(b *testing.B) {
	s := newSimple()
	runDriven(b, "Simple", s.r, DriverGoroutine, func() error { return s.bench(b) })
}

// SimpleOnLoop: Simple with the whole benchmark inside a loop callback
// (driver=loop).
func SimpleOnLoop(b *testing.B) {
	s := newSimple()
	runDriven(b, "Simple", s.r, DriverLoop, func() error { return s.bench(b) })
}

// --- Sequential ---

type sequentialFixture struct {
	name string // the scenario, in error messages
	r    *reactor.Reactor
	root *engine.Steps
	step engine.ExecFunc // sets last to the value it passes on
	last int64
}

func newSequential() *sequentialFixture {
	s := &sequentialFixture{name: "Sequential", r: reactor.NewManual()}
	s.step = func(as *engine.Steps) {
		v := as.Arg(0).Int() + 1
		s.last = v
		as.Success(engine.Int(v))
	}
	return s
}

// round builds the root with n steps (the root is reused: a finished root
// takes new steps), executes it and checks that the value went through all
// of them. The root is taken from the pool on first use, by the driver.
func (s *sequentialFixture) round(n int) error {
	if s.root == nil {
		s.root = engine.New(s.r)
	}
	s.last = -1
	for range n {
		s.root.Add(s.step)
	}
	s.root.Execute()
	s.r.RunUntilIdle()
	if s.last != int64(n) {
		return fmt.Errorf("%s: %d steps ended with value %d, want %d", s.name, n, s.last, n)
	}
	return nil
}

func (s *sequentialFixture) bench(b *testing.B) error {
	for range 16 {
		if err := s.round(SequentialSteps); err != nil {
			return err
		}
	}
	b.ResetTimer()
	for left := b.N; left > 0; {
		n := min(left, SequentialSteps)
		if err := s.round(n); err != nil {
			return err
		}
		left -= n
	}
	b.StopTimer()
	reportPer(b, "step")
	return nil
}

// Sequential: one flow of SequentialSteps steps, each succeeding with the
// Int it received plus one, driven from the benchmark goroutine
// (driver=goroutine). b.N counts steps: b.N/SequentialSteps full rounds and
// one shorter round for the remainder.
func Sequential(b *testing.B) {
	s := newSequential()
	runDriven(b, "Sequential", s.r, DriverGoroutine, func() error { return s.bench(b) })
}

// SequentialOnLoop: Sequential with the whole benchmark inside a loop
// callback (driver=loop).
func SequentialOnLoop(b *testing.B) {
	s := newSequential()
	runDriven(b, "Sequential", s.r, DriverLoop, func() error { return s.bench(b) })
}

// --- ParallelOneStep ---
//
// The one-step Parallel of earlier tables: each flow is one step that
// waits and is completed with no value. Parallel in the C++ reference's
// shape (two steps, an int passed) is in cpp_shapes.go.

type parallelFixture struct {
	r     *reactor.Reactor
	d     Driver
	roots []*engine.Steps
	exts  []engine.External
	wait  engine.ExecFunc
}

func newParallel(d Driver) *parallelFixture {
	p := &parallelFixture{
		r:     reactor.NewManual(),
		d:     d,
		roots: make([]*engine.Steps, 0, ParallelFlows),
		exts:  make([]engine.External, 0, ParallelFlows),
	}
	p.wait = func(as *engine.Steps) { p.exts = append(p.exts, as.External()) }
	return p
}

// batch starts n flows whose one step waits for an External, runs the loop
// until all of them wait, completes every External from the driver, runs
// the loop until all flows have ended, and releases the roots.
//
// Under driver=goroutine each Execute and each External.Success is a task
// posted to the reactor's ring, and the loop is run every drainEvery posts.
// Under driver=loop nothing is posted: Execute queues the flow, Success
// applies the result and queues the flow to advance, and one nested
// RunUntilIdle runs all of them.
func (p *parallelFixture) batch(n int) error {
	if err := where(p.r, p.d); err != nil {
		return err
	}
	drain := p.d == DriverGoroutine
	p.roots, p.exts = p.roots[:0], p.exts[:0]
	for i := range n {
		root := engine.New(p.r)
		root.Add(p.wait)
		root.Execute()
		p.roots = append(p.roots, root)
		if drain && (i+1)%drainEvery == 0 {
			p.r.RunUntilIdle()
		}
	}
	p.r.RunUntilIdle()
	if len(p.exts) != n {
		return fmt.Errorf("Parallel: %d of %d flows reached their waiting step", len(p.exts), n)
	}
	for i, x := range p.exts {
		if !x.Success() {
			return fmt.Errorf("Parallel: External.Success of flow %d of %d reported false", i, n)
		}
		if drain && (i+1)%drainEvery == 0 {
			p.r.RunUntilIdle()
		}
	}
	p.r.RunUntilIdle()
	if st := engine.StatsOf(p.r); st.FramesLive != 0 {
		return fmt.Errorf("Parallel: %d step frames still live after all %d flows were completed", st.FramesLive, n)
	}
	for _, root := range p.roots {
		root.Release()
	}
	return nil
}

func (p *parallelFixture) bench(b *testing.B) error {
	return benchBatches(b, p.batch)
}

// benchBatches runs the Parallel rows' timed loop: two warm-up batches of
// ParallelFlows flows, then b.N flows in batches of at most ParallelFlows,
// reported per flow.
func benchBatches(b *testing.B, batch func(n int) error) error {
	for range 2 {
		if err := batch(ParallelFlows); err != nil {
			return err
		}
	}
	b.ResetTimer()
	for left := b.N; left > 0; {
		n := min(left, ParallelFlows)
		if err := batch(n); err != nil {
			return err
		}
		left -= n
	}
	b.StopTimer()
	reportPer(b, "flow")
	return nil
}

// ParallelOneStep: batches of ParallelFlows flows, each one step that takes
// as.External() and waits; once all wait, the benchmark goroutine completes
// them all, then runs the loop (driver=goroutine). b.N counts flows.
func ParallelOneStep(b *testing.B) {
	p := newParallel(DriverGoroutine)
	runDriven(b, "ParallelOneStep", p.r, p.d, func() error { return p.bench(b) })
}

// ParallelOneStepOnLoop: ParallelOneStep with the whole benchmark inside a loop callback
// (driver=loop): the flows are started and their Externals completed on the
// loop, as the C++ reference does.
func ParallelOneStepOnLoop(b *testing.B) {
	p := newParallel(DriverLoop)
	runDriven(b, "ParallelOneStep", p.r, p.d, func() error { return p.bench(b) })
}

// --- ParallelWaitLoopOneStep ---
//
// The one-step ParallelWaitLoop of earlier tables: each iteration is one
// step that waits and is completed with no value, by a driver callback (not
// a flow). The C++ reference's shape is in cpp_shapes.go.

type waitLoopFixture struct {
	r     *reactor.Reactor
	d     Driver
	roots []*engine.Steps
	slots []engine.External // slots[i]: what flow i's current iteration waits for

	stop      bool // bodies Break instead of waiting
	quota     int  // how many slots the driver completes this round
	completed int
	drive     func()
}

// newWaitLoop makes the fixture; start starts its flows.
func newWaitLoop(d Driver) *waitLoopFixture {
	w := &waitLoopFixture{
		r:     reactor.NewManual(),
		d:     d,
		roots: make([]*engine.Steps, ParallelFlows),
		slots: make([]engine.External, ParallelFlows),
	}
	// The driver runs on the loop, as the C++ reference's driver flow does:
	// it completes the stored Externals.
	w.drive = func() {
		for _, x := range w.slots[:min(w.quota, len(w.slots))] {
			if x.Success() {
				w.completed++
			}
		}
	}
	return w
}

// start starts ParallelFlows flows, each one Loop whose body stores its
// External in the flow's slot and waits.
func (w *waitLoopFixture) start() error {
	if err := where(w.r, w.d); err != nil {
		return err
	}
	for i := range w.roots {
		root := engine.New(w.r)
		root.Loop(func(as *engine.Steps) {
			if w.stop {
				as.Break()
			}
			w.slots[i] = as.External()
		})
		root.Execute()
		w.roots[i] = root
		if w.d == DriverGoroutine && (i+1)%drainEvery == 0 {
			w.r.RunUntilIdle()
		}
	}
	w.r.RunUntilIdle()
	for i, x := range w.slots {
		if !x.Valid() {
			return fmt.Errorf("ParallelWaitLoop: flow %d is not waiting after start", i)
		}
	}
	return nil
}

// round completes the current iteration of the first n flows (n ≤
// ParallelFlows) and runs the loop until each of them waits again in its
// next iteration. Under driver=goroutine the driver is one task posted to
// the loop per round; under driver=loop the benchmark is already on the
// loop and calls it directly. Either way every Success is made on the loop.
func (w *waitLoopFixture) round(n int) error {
	w.quota, w.completed = n, 0
	if w.d == DriverLoop {
		w.drive()
	} else {
		w.r.Immediate(w.drive)
	}
	w.r.RunUntilIdle()
	if w.completed != n {
		return fmt.Errorf("ParallelWaitLoop: the driver completed %d of %d iterations", w.completed, n)
	}
	return nil
}

// close breaks every loop and releases the roots.
func (w *waitLoopFixture) close() error {
	w.stop = true
	if err := w.round(len(w.slots)); err != nil {
		return err
	}
	if st := engine.StatsOf(w.r); st.FramesLive != 0 {
		return fmt.Errorf("ParallelWaitLoop: %d step frames still live after every loop broke", st.FramesLive)
	}
	for _, root := range w.roots {
		root.Release()
	}
	return nil
}

func (w *waitLoopFixture) bench(b *testing.B) error {
	if err := w.start(); err != nil {
		return err
	}
	for range 2 {
		if err := w.round(ParallelFlows); err != nil {
			return err
		}
	}
	b.ResetTimer()
	for left := b.N; left > 0; {
		n := min(left, ParallelFlows)
		if err := w.round(n); err != nil {
			return err
		}
		left -= n
	}
	b.StopTimer()
	reportPer(b, "iter")
	return w.close()
}

// ParallelWaitLoopOneStep: ParallelFlows flows, each looping on a body that waits
// for an External; a driver task posted to the loop completes all stored
// Externals each round (driver=goroutine). b.N counts iterations, spread
// over the flows.
func ParallelWaitLoopOneStep(b *testing.B) {
	w := newWaitLoop(DriverGoroutine)
	runDriven(b, "ParallelWaitLoopOneStep", w.r, w.d, func() error { return w.bench(b) })
}

// ParallelWaitLoopOneStepOnLoop: ParallelWaitLoopOneStep with the whole benchmark, the
// flows' start included, inside a loop callback (driver=loop).
func ParallelWaitLoopOneStepOnLoop(b *testing.B) {
	w := newWaitLoop(DriverLoop)
	runDriven(b, "ParallelWaitLoopOneStep", w.r, w.d, func() error { return w.bench(b) })
}

// --- Timeout ---

type timeoutFixture struct {
	r    *reactor.Reactor
	root *engine.Steps
	step engine.ExecFunc
	ext  engine.External
}

func newTimeout() *timeoutFixture {
	t := &timeoutFixture{r: reactor.NewManual()}
	t.step = func(as *engine.Steps) {
		as.SetTimeout(time.Second)
		t.ext = as.External()
	}
	return t
}

// op runs a step that sets a 1s timeout and waits; the driver completes it
// through its External long before the (virtual) second ends. The root is
// taken from the pool on first use, by the driver.
func (t *timeoutFixture) op() error {
	if t.root == nil {
		t.root = engine.New(t.r)
	}
	t.root.Add(t.step)
	t.root.Execute()
	t.r.RunUntilIdle()
	if !t.ext.Success() {
		return fmt.Errorf("Timeout: External.Success reported false: the step was not waiting")
	}
	t.r.RunUntilIdle()
	return nil
}

// check reports an error any run of the flow recorded (State is kept
// across runs of a reused root).
func (t *timeoutFixture) check() error {
	if t.root == nil {
		return fmt.Errorf("Timeout: the flow never ran")
	}
	if err := t.root.State().LastException; err != nil {
		return fmt.Errorf("Timeout: the flow failed: %v", err)
	}
	if st := engine.StatsOf(t.r); st.FramesLive != 0 {
		return fmt.Errorf("Timeout: %d step frames still live after the flow ended", st.FramesLive)
	}
	return nil
}

func (t *timeoutFixture) bench(b *testing.B) error {
	for range warmRounds {
		if err := t.op(); err != nil {
			return err
		}
	}
	b.ResetTimer()
	for range b.N {
		if err := t.op(); err != nil {
			return err
		}
	}
	b.StopTimer()
	return t.check()
}

// Timeout: a step calls as.SetTimeout(time.Second), then succeeds through
// its External before the timeout, completed from the benchmark goroutine
// (driver=goroutine). b.N counts flows.
func Timeout(b *testing.B) {
	t := newTimeout()
	runDriven(b, "Timeout", t.r, DriverGoroutine, func() error { return t.bench(b) })
}

// TimeoutOnLoop: Timeout with the whole benchmark inside a loop callback
// (driver=loop): the External is completed on the loop.
func TimeoutOnLoop(b *testing.B) {
	t := newTimeout()
	runDriven(b, "Timeout", t.r, DriverLoop, func() error { return t.bench(b) })
}
