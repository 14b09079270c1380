// Command benchtable is the benchmark harness behind `make bench`: every
// scenario of the engine, the reactor, the sync primitives, the C ABI and
// the server, each beside its Go peer in the same run, printed as one table
// and saved under profiles/ as benchstat text and as JSON.
//
//	cd bench && go run ./cmd/benchtable [flags]
//
// Scenarios come from the bench package's registries, grouped in suites:
//
//   - engine:   bench.Scenarios, the engine on a manual reactor, ours under
//     both drivers (driver=loop, driver=goroutine) beside goroutines;
//   - reactor:  bench.ReactorScenarios, real reactors (pinned one per CPU
//     unless -pin=false) beside goroutines, channels and the runtime's
//     timers;
//   - syncprim: bench.SyncScenarios, syncprim's Mutex and Throttle on the
//     same pinned reactors beside x/sync/semaphore, sync.Mutex and
//     x/time/rate;
//   - abi:      the main module's abi benchmarks (C steps beside the same
//     steps in Go), run as `go test -bench` of ./abi in a child process
//     and parsed: that package needs cgo and its C fixtures live in its
//     test files, and the harness itself stays a pure-Go binary, so the
//     other suites are not measured in a cgo-linked process;
//   - server:   cmd/loadbench in a child process: stepsd (pinned with the
//     reactors) beside a plain gnet server and a goroutine-per-connection
//     net server, over loopback.
//
// In-process scenarios run through testing.Benchmark on the same functions
// `go test -bench` runs; with -count N each implementation of a scenario
// runs N times, interleaved (ours, peer, ours, peer, ...), and the table
// shows the median run. Every run is written to the benchstat file, so
// that `benchstat old.txt new.txt` compares two runs with their variance.
//
// Exit status: 1 if a benchmark failed (a wrong result, a server that
// failed), 2 on bad flags or when a run did not finish within -timeout (a
// deadlock: every goroutine's stack is printed).
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
