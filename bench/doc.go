// Package bench compares the asyncsteps engine with the idiomatic Go way of
// doing the same work: a goroutine per flow, channels and sync.WaitGroup.
//
// It lives in its own module (github.com/asyncsteps/asyncsteps/bench) so
// that peers and their dependencies never leak into the main module; nothing
// imports it.
//
// The scenarios are those of the C++ reference implementation's benchmarks
// (FutoIn core-cpp-ri-asyncsteps, bench/futoin_asyncsteps.bench.cpp and
// futoin_nitrosteps.bench.cpp), in their shapes, plus rows of our own.
// Scenario.Cpp names the C++ benchmark a row mirrors:
//
//   - Simple: Simple_bench (a root, one empty step, execute, one iterate);
//   - Parallel: Parallel_bench (30,000 two-step flows; step 1 parks on an
//     external completion, the loop is iterated once per flow, then every
//     parked step is completed with the int 1 and step 2 consumes it);
//   - ParallelWaitLoop: ParallelWaitLoop_bench (30,000 flows, each a loop
//     of {park, consume the int}; the driver is itself a looping flow that
//     completes every parked step and yields through an immediate);
//   - Sequential: a step that receives an int and succeeds with int+1;
//   - Turn: AsyncTool's immediate plus iterate; EmptyIteration: iterate
//     with nothing to do. Each has a third row of ours,
//     driver=loopctx: the same calls on the loop through the callback's
//     reactor.Loop (Loop.Immediate, Loop.RunUntilIdle), which asks no
//     goroutine identity; C++'s `at.immediate(cb); at.iterate();` and
//     `at.iterate()` likewise hold the tool and ask nothing.
//
// ParallelOneStep and ParallelWaitLoopOneStep are the one-step, valueless
// variants of earlier tables (no C++ counterpart), kept so that their
// history stays comparable; Timeout, MutexSection, SimpleUnreleased,
// SequentialStrInt and RepeatEmpty have no C++ counterpart either. The
// floors (floor_*_test.go: BenchmarkFloorSimple, FloorTurn,
// FloorEmptyIteration, FloorParallelWaitLoop) are bare Go loops doing the
// same indirect calls and links as a row, for reading its gap.
//
// Each scenario is implemented twice, one file per implementation:
//
//   - asyncsteps.go (and cpp_shapes.go, speed_*.go): ours, on a warm reactor.NewManual (no loop thread, so
//     the numbers are the engine's own cost, not a scheduler's), under two
//     drivers: driver=loop runs the whole benchmark inside a loop callback,
//     as the C++ reference and a server's own flows do (loop-local pools, no
//     ring hop); driver=goroutine drives it from the benchmark goroutine,
//     off the loop, paying the cross-goroutine handoffs (root pool lock,
//     submission ring, taking the loop);
//   - goroutines.go: the peer, with the runtime's scheduler doing the work.
//
// scenarios.go holds the table of scenarios (Scenarios), their units and
// their targets.
//
// The sync primitives (package syncprim) are compared with the Go
// libraries that do the same job, one file per implementation:
// syncprim.go (ours, on two real reactors), semaphore.go
// (golang.org/x/sync/semaphore), stdsync.go (sync.Mutex) and rate.go
// (golang.org/x/time/rate); sync_scenarios.go holds their table
// (SyncScenarios) and the work all of them do. The functions are exported so that both `go test -bench`
// (scenarios_test.go) and the cmd/benchtable program (testing.Benchmark)
// run exactly the same code.
//
// The network benchmark, stepsd against a plain gnet server and a
// goroutine-per-connection net server of the same protocol, is package
// netbench and cmd/loadbench. It is kept out of this package so that
// gnet's root package (and its allocating goroutine pool) is not linked
// into these allocation measurements.
//
// Every benchmark calls b.ReportAllocs, warms its pools up before
// b.ResetTimer, checks its result (a wrong value fails the benchmark), and
// reports its own unit (ns/step, ns/flow, ns/iter) beside ns/op, which
// always means the same thing: b.N counts units, not rounds.
package bench
