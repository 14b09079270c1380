package bench

import (
	"slices"
	"testing"
	"time"
)

// ReactorScenario is a scenario on real reactors (placed by CPUs and Pin)
// or on a reactor's parts, beside its Go peers: the scenarios of package
// reactor's and engine's own real-reactor benchmarks, here so that the
// harness runs them pinned, one per CPU, in the same process as their
// peers. Ours is impl=asyncsteps; each peer is impl=<Peer.Name>.
type ReactorScenario struct {
	Name string // BenchmarkName
	Unit string // what b.N counts
	What string // one line: what one unit is

	Ours  func(b *testing.B) // impl=asyncsteps
	Peers []Peer

	// Latency is set when the scenario reports MetricP50 and MetricP99,
	// and they, not the time per unit, are its result: the ratio of ours to
	// a peer is then taken on p50.
	Latency bool
}

// Latency metrics, in µs, reported by b.ReportMetric.
const (
	MetricP50 = "p50-µs"
	MetricP99 = "p99-µs"
)

// Implementation names of the reactor scenarios' peers.
const (
	ImplChan      = "chan"           // a channel to a goroutine locked to its thread
	ImplAfterFunc = "time.AfterFunc" // the runtime's timers
)

// ReactorScenarios is the table of real-reactor scenarios, in the order
// reports print it.
var ReactorScenarios = []ReactorScenario{
	{
		Name: "Call", Unit: "op", Latency: true,
		What:  "a one-step flow started from a goroutine on the group's next reactor with the public API (New, Add, Promise().Wait(), Release)",
		Ours:  Call,
		Peers: []Peer{{ImplGoroutines, RealSimpleGoroutines}}, // go f() and a receive, as RealSimple's peer
	},
	{
		Name: "FanOut", Unit: "flow",
		What:  "one of 1,000 one-step flows started over the group at once (New, Add, Promise), all waited for and released",
		Ours:  FanOut,
		Peers: []Peer{{ImplGoroutines, FanOutGoroutines}},
	},
	{
		Name: "FanOutBatch", Unit: "flow",
		What:  "FanOut through an engine.Batch: 1,000 one-step flows added, executed at once (one post per reactor), waited for once, results read, released",
		Ours:  FanOutBatch,
		Peers: []Peer{{ImplGoroutines, FanOutGoroutines}},
	},
	{
		Name: "FanOutBatchRun", Unit: "flow",
		What:  "FanOutBatch with Batch.Run: parked loops are not woken, the waiting goroutine runs their turns",
		Ours:  FanOutBatchRun,
		Peers: []Peer{{ImplGoroutines, FanOutGoroutines}},
	},
	{
		Name: "RealSimple", Unit: "op", Latency: true,
		What:  "a one-step flow started from another goroutine on a real reactor (round robin), waited for, released",
		Ours:  RealSimple,
		Peers: []Peer{{ImplGoroutines, RealSimpleGoroutines}},
	},
	{
		Name: "RealParallel", Unit: "flow",
		What:  "one of 30,000 flows spread over the reactors, started and completed from another goroutine",
		Ours:  RealParallel,
		Peers: []Peer{{ImplGoroutines, ParallelGoroutines}},
	},
	{
		Name: "Submit", Unit: "item",
		What:  "one callback handed from a goroutine to a running consumer (reactor.Post / a buffered channel)",
		Ours:  Submit,
		Peers: []Peer{{ImplChan, SubmitChan}},
	},
	{
		Name: "Wakeup", Unit: "op", Latency: true,
		What:  "latency from a post to a sleeping consumer to its callback running (ns/op is mostly a 200µs idle gap)",
		Ours:  Wakeup,
		Peers: []Peer{{ImplChan, WakeupChan}},
	},
	{
		Name: "TimerLateness", Unit: "op", Latency: true,
		What:  "how late a 1ms timer fires (ns/op is mostly the gap between timers)",
		Ours:  TimerLateness,
		Peers: []Peer{{ImplAfterFunc, TimerLatenessAfterFunc}},
	},
	{
		Name: "TimerAddCancel", Unit: "op",
		What:  "arm a timer and cancel it (a step timeout that did not fire): timerwheel.Wheel against the runtime's timers",
		Ours:  TimerAddCancel,
		Peers: []Peer{{ImplAfterFunc, TimerAddCancelAfterFunc}},
	},
}

// LookupReactor returns the reactor scenario called name.
func LookupReactor(name string) (ReactorScenario, bool) {
	for _, s := range ReactorScenarios {
		if s.Name == name {
			return s, true
		}
	}
	return ReactorScenario{}, false
}

// reportLatency reports the p50 and p99 of samples, in µs (it sorts them).
func reportLatency(b *testing.B, samples []time.Duration) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(samples[len(samples)/2]), MetricP50)
	b.ReportMetric(us(samples[len(samples)*99/100]), MetricP99)
}
