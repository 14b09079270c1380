package bench

import (
	"fmt"
	"sync"
	"testing"
)

// DriverLoopCtx is the sub-benchmark name's driver of Scenario.OursLoopCtx
// (BenchmarkTurn/impl=asyncsteps/driver=loopctx): on the loop, as
// DriverLoop, through a reactor.Loop.
const DriverLoopCtx = "loopctx"

// Implementation names, as they appear in sub-benchmark names
// (BenchmarkSimple/impl=asyncsteps/driver=loop,
// BenchmarkSimple/impl=goroutines): benchstat compares runs by them. Ours
// has two drivers (Driver: "driver=loop" and "driver=goroutine").
const (
	ImplAsyncSteps = "asyncsteps"
	ImplGoroutines = "goroutines"
)

// Sizes shared by both implementations of a scenario.
const (
	// SequentialSteps is how many steps one Sequential round chains.
	SequentialSteps = 1024
	// ParallelFlows is how many flows are alive at once in Parallel and
	// ParallelWaitLoop (the C++ reference's Parallel_LIMIT).
	ParallelFlows = 30000
)

// Scenario is one row of the comparison: a workload, our implementation,
// the idiomatic Go peer, and the target ours must meet.
type Scenario struct {
	Name string // BenchmarkName; sub-benchmarks are impl=asyncsteps/driver=loop, impl=asyncsteps/driver=goroutine and impl=goroutines
	Unit string // what b.N counts: "op", "step", "flow" or "iter"
	What string // one line: what one unit is
	Cpp  string // the C++ reference benchmark this row mirrors, in its shape; "" when none does (doc.go lists them)

	OursLoop func(b *testing.B) // impl=asyncsteps/driver=loop: the benchmark runs inside a loop callback
	// OursLoopCtx, when not nil: impl=asyncsteps/driver=loopctx, OursLoop
	// through the loop callback's reactor.Loop (Loop.Immediate,
	// Loop.RunUntilIdle) instead of the Reactor's methods.
	OursLoopCtx func(b *testing.B)
	Ours        func(b *testing.B) // impl=asyncsteps/driver=goroutine: the benchmark goroutine drives the loop from outside
	Peer        func(b *testing.B) // impl=goroutines

	// Targets for ours, under either driver. MaxNs is per Unit; 0 means no
	// time target.
	MaxNs      float64
	ZeroAllocs bool
}

// Target describes the scenario's targets, e.g. "≤150 ns/flow, 0 allocs".
func (s Scenario) Target() string {
	var t string
	if s.MaxNs > 0 {
		t = fmt.Sprintf("≤%g ns/%s", s.MaxNs, s.Unit)
	}
	if s.ZeroAllocs {
		if t != "" {
			t += ", "
		}
		t += "0 allocs"
	}
	return t
}

// OursBy returns our implementation under driver d.
func (s Scenario) OursBy(d Driver) func(b *testing.B) {
	if d == DriverLoop {
		return s.OursLoop
	}
	return s.Ours
}

// Met reports whether a result of ours (either driver) meets the targets: nsPerUnit within
// MaxNs, and no allocation in the measured part when ZeroAllocs is set.
func (s Scenario) Met(nsPerUnit float64, allocs uint64) bool {
	if s.MaxNs > 0 && nsPerUnit > s.MaxNs {
		return false
	}
	return !s.ZeroAllocs || allocs == 0
}

// Scenarios is the table, in the order the reports print it.
var Scenarios = []Scenario{
	{
		Name: "Turn", Unit: "op",
		What:     "Immediate(empty callback) + RunUntilIdle: the reactor's own cost per turn",
		Cpp:      "AsyncTool immediate + iterate",
		OursLoop: TurnOnLoop, Ours: Turn, Peer: TurnGoroutines, OursLoopCtx: TurnLoopCtx,
		MaxNs: 9, ZeroAllocs: true,
	},
	{
		Name: "EmptyIteration", Unit: "iter",
		What:     "RunUntilIdle on an idle reactor (engine attached): one loop iteration that finds nothing to do",
		Cpp:      "AsyncTool iterate() with no work",
		OursLoop: EmptyIterationOnLoop, Ours: EmptyIteration, Peer: EmptyIterationGoroutines, OursLoopCtx: EmptyIterationLoopCtx,
		MaxNs: 6.7, ZeroAllocs: true, // half of AsyncTool's 13.4 ns
	},
	{
		Name: "Simple", Unit: "op",
		What:     "new root, one empty step, Execute, run until idle, Release",
		Cpp:      "Simple_bench",
		OursLoop: SimpleOnLoop, Ours: Simple, Peer: SimpleGoroutines,
		MaxNs: 60, ZeroAllocs: true,
	},
	{
		Name: "MutexSection", Unit: "op",
		What:     "Simple with its step inside an uncontended syncprim.Mutex (Simple's row + the section)",
		OursLoop: MutexSectionOnLoop, Ours: MutexSection, Peer: MutexSectionGoroutines,
		MaxNs: 90, ZeroAllocs: true,
	},
	{
		Name: "Sequential", Unit: "step",
		What:     "one step of a 1024-step flow passing an Int to the next",
		Cpp:      "the sequential step (int in, int+1 out) of the C++ reference's table",
		OursLoop: SequentialOnLoop, Ours: Sequential, Peer: SequentialGoroutines,
		MaxNs: 5, ZeroAllocs: true,
	},
	{
		Name: "Parallel", Unit: "flow",
		What:     "one of 30,000 two-step flows: step 1 parks (External), completed with Int(1), step 2 consumes it",
		Cpp:      "Parallel_bench",
		OursLoop: ParallelOnLoop, Ours: Parallel, Peer: ParallelGoroutines,
		MaxNs: 614, ZeroAllocs: true, // half of NitroSteps' 1,229 ns
	},
	{
		Name: "ParallelWaitLoop", Unit: "iter",
		What:     "one iteration {park, consume Int(1)} of one of 30,000 loops, completed by a looping driver flow that yields",
		Cpp:      "ParallelWaitLoop_bench",
		OursLoop: ParallelWaitLoopOnLoop, Ours: ParallelWaitLoop, Peer: ParallelWaitLoopGoroutines,
		MaxNs: 215, ZeroAllocs: true, // half of AsyncSteps' 430 ns
	},
	{
		Name: "ParallelOneStep", Unit: "flow",
		What:     "one of 30,000 one-step flows started, left waiting, then completed with no value",
		OursLoop: ParallelOneStepOnLoop, Ours: ParallelOneStep, Peer: ParallelGoroutines,
		MaxNs: 150, ZeroAllocs: true,
	},
	{
		Name: "ParallelWaitLoopOneStep", Unit: "iter",
		What:     "one iteration (one waiting step, no value) of one of 30,000 loops, completed by a driver callback",
		OursLoop: ParallelWaitLoopOneStepOnLoop, Ours: ParallelWaitLoopOneStep, Peer: ParallelWaitLoopGoroutines,
		MaxNs: 40, ZeroAllocs: true,
	},
	{
		Name: "SimpleUnreleased", Unit: "op",
		What:     "Simple with the root never Released: New, one empty step, Execute, run until idle, dropped",
		OursLoop: SimpleUnreleasedOnLoop, Ours: SimpleUnreleased, Peer: SimpleGoroutines,
		MaxNs: 140, // and at most one allocation (profiles/notes/2026-11-25-never-released-roots.md); Scenario has no allocation bound but zero
	},
	{
		Name: "SequentialStrInt", Unit: "step",
		What:     "one step of a 1024-step flow passing a Str and an Int to the next",
		OursLoop: SequentialStrIntOnLoop, Ours: SequentialStrInt, Peer: SequentialStrIntGoroutines,
		MaxNs: 15, ZeroAllocs: true,
	},
	{
		Name: "RepeatEmpty", Unit: "iter",
		What:     "one iteration of a Repeat with an empty body",
		OursLoop: RepeatEmptyOnLoop, Ours: RepeatEmpty, Peer: RepeatEmptyGoroutines,
		MaxNs: 8, ZeroAllocs: true,
	},
	{
		Name: "Timeout", Unit: "op",
		What:     "a step with a 1s timeout completed externally before it expires",
		OursLoop: TimeoutOnLoop, Ours: Timeout, Peer: TimeoutGoroutines,
		ZeroAllocs: true,
	},
}

// Lookup returns the scenario called name.
func Lookup(name string) (Scenario, bool) {
	for _, s := range Scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// reportPer reports the benchmark's time per unit under its own name
// ("ns/step", ...). ns/op already means the same, since b.N counts units;
// the extra metric makes the unit explicit in benchstat output.
func reportPer(b *testing.B, unit string) {
	if unit == "op" || b.N == 0 {
		return
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/"+unit)
}

// warmRounds is how many times a benchmark runs its operation before
// b.ResetTimer, so that pools, free lists and the goroutine cache are full.
const warmRounds = 1000

var (
	failMu   sync.Mutex
	failLast string
)

// fatalf fails the benchmark and remembers why, for TakeFailure:
// testing.Benchmark, which cmd/benchtable uses, discards a failed
// benchmark's output.
func fatalf(b *testing.B, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	failMu.Lock()
	failLast = msg
	failMu.Unlock()
	b.Fatal(msg)
}

// TakeFailure returns, and forgets, the message of the last benchmark that
// failed, or "".
func TakeFailure() string {
	failMu.Lock()
	defer failMu.Unlock()
	msg := failLast
	failLast = ""
	return msg
}
