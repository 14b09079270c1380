// Package bench compares the asyncsteps engine with the idiomatic Go way of
// doing the same work: a goroutine per flow, channels and sync.WaitGroup.
//
// It lives in its own module (github.com/asyncsteps/asyncsteps/bench) so
// that peers and their dependencies never leak into the main module; nothing
// imports it.
//
// The scenarios are those of the C++ reference implementation's benchmarks
// (FutoIn core-cpp-ri-asyncsteps, bench/): Simple, Parallel and
// ParallelWaitLoop, plus Sequential and Timeout. Each is implemented twice,
// one file per implementation:
//
//   - asyncsteps.go: ours, on a warm reactor.NewManual (no loop thread, so
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
