package main

import (
	"fmt"
	"testing"

	"github.com/asyncsteps/asyncsteps/bench"
)

// The suites, in the order the table prints them.
const (
	suiteEngine   = "engine"
	suiteReactor  = "reactor"
	suiteSyncprim = "syncprim"
	suiteABI      = "abi"
	suiteServer   = "server"
)

const (
	pkgBench = "github.com/asyncsteps/asyncsteps/bench"
	pkgABI   = "github.com/asyncsteps/asyncsteps/abi"
)

// implSpec is one implementation of a scenario.
type implSpec struct {
	name string // as in the sub-benchmark's name after "impl=": "asyncsteps/driver=loop", "goroutines", "c"
	ours bool
	fn   func(*testing.B) // in-process; nil when a child process runs it
}

// caseSpec is one scenario of the table: a workload and its
// implementations, ours first.
type caseSpec struct {
	suite, name, unit, what string
	latency                 bool // the result is p50/p99, and the ratio is taken on p50
	pkg                     string
	impls                   []implSpec
}

// id is how -scenarios and reports name the case: suite/Name.
func (c caseSpec) id() string { return c.suite + "/" + c.name }

// benchName is the benchstat name of impl, without the -GOMAXPROCS
// suffix: BenchmarkSimple/impl=asyncsteps/driver=loop.
func benchName(name, impl string) string {
	if impl == "" {
		return "Benchmark" + name
	}
	return fmt.Sprintf("Benchmark%s/impl=%s", name, impl)
}

// inProcessCases lists the scenarios of the bench package's registries.
func inProcessCases() []caseSpec {
	var cs []caseSpec
	for _, s := range bench.Scenarios {
		c := caseSpec{suite: suiteEngine, name: s.Name, unit: s.Unit, what: s.What, pkg: pkgBench}
		for _, d := range []bench.Driver{bench.DriverLoop, bench.DriverGoroutine} {
			c.impls = append(c.impls, implSpec{name: fmt.Sprintf("%s/driver=%v", bench.ImplAsyncSteps, d), ours: true, fn: s.OursBy(d)})
		}
		if s.OursLoopCtx != nil {
			c.impls = append(c.impls, implSpec{name: fmt.Sprintf("%s/driver=%s", bench.ImplAsyncSteps, bench.DriverLoopCtx), ours: true, fn: s.OursLoopCtx})
		}
		c.impls = append(c.impls, implSpec{name: bench.ImplGoroutines, fn: s.Peer})
		cs = append(cs, c)
	}
	for _, s := range bench.ReactorScenarios {
		c := caseSpec{suite: suiteReactor, name: s.Name, unit: s.Unit, what: s.What, latency: s.Latency, pkg: pkgBench}
		c.impls = append(c.impls, implSpec{name: bench.ImplAsyncSteps, ours: true, fn: s.Ours})
		for _, p := range s.Peers {
			c.impls = append(c.impls, implSpec{name: p.Name, fn: p.Bench})
		}
		cs = append(cs, c)
	}
	for _, s := range bench.SyncScenarios {
		c := caseSpec{suite: suiteSyncprim, name: s.Name, unit: s.Unit, what: s.What, pkg: pkgBench}
		c.impls = append(c.impls, implSpec{name: bench.ImplAsyncSteps, ours: true, fn: s.Ours})
		for _, p := range s.Peers {
			c.impls = append(c.impls, implSpec{name: p.Name, fn: p.Bench})
		}
		cs = append(cs, c)
	}
	return cs
}

// abiCases are the abi package's benchmarks (abi/bench_test.go), run by
// `go test -bench` in a child process: C steps (ours) beside the same
// steps in Go (the peer), and the floor under them, an empty cgo call.
func abiCases() []caseSpec {
	return []caseSpec{
		{suite: suiteABI, name: "CStep", unit: "step", pkg: pkgABI,
			what:  "a step that succeeds with its two integer arguments + 1, in C (added by C; by abi.AddC; by Go through the vtable) and in Go",
			impls: []implSpec{{name: "c", ours: true}, {name: "c/add=AddC", ours: true}, {name: "c/add=go", ours: true}, {name: "go"}}},
		{suite: suiteABI, name: "Mixed", unit: "step", pkg: pkgABI,
			what:  "Go and C steps alternating, values crossing at every step, beside the all-Go chain",
			impls: []implSpec{{name: "go+c", ours: true}, {name: "go"}}},
		{suite: suiteABI, name: "ArgsToC", unit: "step", pkg: pkgABI,
			what:  "a step reading the previous step's four values (two 1 KiB strings, no byte copied), in C and in Go",
			impls: []implSpec{{name: "c", ours: true}, {name: "go"}}},
		{suite: suiteABI, name: "CgoCall", unit: "op", pkg: pkgABI,
			what:  "the floor under a C step: one call of an empty C function from Go",
			impls: []implSpec{{name: "", ours: true}}},
	}
}

// serverCase is the server suite as -scenarios and -list see it: one
// entry, since cmd/loadbench runs its whole matrix in one go; its results
// become one case per cell (serverCells).
var serverCase = caseSpec{suite: suiteServer, name: "Load", unit: "req", pkg: pkgBench,
	what: "cmd/loadbench over loopback: SET/GET/ECHO at pipeline 1 and 16 × 1, 16, 256 connections; stepsd beside gnet and a goroutine-per-connection net server"}

// allCases is every scenario the harness knows, in the table's order.
func allCases() []caseSpec {
	cs := inProcessCases()
	cs = append(cs, abiCases()...)
	return append(cs, serverCase)
}
