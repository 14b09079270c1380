package bench

import (
	"sync"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// This file is the shape a new user writes to call into the reactors from
// ordinary Go code, with the public API only: engine.New on the group's
// next reactor, Add, Promise().Wait(), Release. Call is one such call at a
// time; FanOut starts FanOutFlows of them at once and waits for them all.
// Their peers are the Go idioms: go f() with a channel, and goroutines
// with a WaitGroup.

// FanOutFlows is how many flows one FanOut round starts before it waits.
const FanOutFlows = 1000

// callStep is the one step of a Call or FanOut flow: it sets a value, as
// a flow that computes something does.
func callStep(as *engine.Steps) { as.Success(engine.Int(1)) }

// Call: one one-step flow at a time, started from the benchmark goroutine
// on the group's next reactor and waited for with Promise().Wait(), then
// released. Reports the p50 and p99 of the whole call.
func Call(b *testing.B) {
	g, err := StartGroup()
	if err != nil {
		fatalf(b, "Call: %v", err)
	}
	defer closeGroup(b, "Call", g)
	op := func() {
		root := engine.New(g.Next())
		root.Add(callStep)
		if _, err := root.Promise().Wait(); err != nil {
			fatalf(b, "Call: %v", err)
		}
		root.Release()
	}
	for range warmRounds {
		op()
	}
	lat := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range lat {
		t0 := time.Now()
		op()
		lat[i] = time.Since(t0)
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// FanOut: rounds of FanOutFlows one-step flows started over the group
// (engine.New(g.Next()), Add, Promise), then every Promise waited for and
// every root released. b.N counts flows.
func FanOut(b *testing.B) {
	fanOutRounds(b, "FanOut", func(g *reactor.Group) func(n int) {
		return promiseRound(b, "FanOut", g)
	})
}

// promiseRound is one FanOut round over g: n flows started (New(g.Next()),
// Add, Promise), then each waited for and released.
func promiseRound(b *testing.B, name string, g *reactor.Group) func(n int) {
	roots := make([]*engine.Steps, FanOutFlows)
	ps := make([]*engine.Promise, FanOutFlows)
	return func(n int) {
		for i := range n {
			roots[i] = engine.New(g.Next())
			roots[i].Add(callStep)
			ps[i] = roots[i].Promise()
		}
		for i := range n {
			if _, err := ps[i].Wait(); err != nil {
				fatalf(b, "%s: %v", name, err)
			}
			roots[i].Release()
			ps[i] = nil
		}
	}
}

// FanOutBatch: FanOut through an engine.Batch, the API for starting many
// flows and waiting for them all: rounds of FanOutFlows one-step flows
// built over the group (engine.New(g.Next()), Add), added to the Batch,
// executed (one post per reactor), waited for (one wake-up), each result
// read and each root released. b.N counts flows.
func FanOutBatch(b *testing.B) {
	fanOutRounds(b, "FanOutBatch", func(g *reactor.Group) func(n int) {
		return batchRound(b, "FanOutBatch", g, false)
	})
}

// FanOutBatchRun: FanOutBatch with Batch.Run (Execute and Wait in one
// call, parked loops not woken: the waiting goroutine runs their turns).
func FanOutBatchRun(b *testing.B) {
	fanOutRounds(b, "FanOutBatchRun", func(g *reactor.Group) func(n int) {
		return batchRound(b, "FanOutBatchRun", g, true)
	})
}

// batchRound is one FanOutBatch round over g: n roots built and added,
// executed and waited for (Execute then Wait, or Run where run is set),
// each result read and each root released.
func batchRound(b *testing.B, name string, g *reactor.Group, run bool) func(n int) {
	roots := make([]*engine.Steps, FanOutFlows)
	var batch engine.Batch
	return func(n int) {
		for i := range n {
			roots[i] = engine.New(g.Next())
			roots[i].Add(callStep)
			batch.Add(roots[i])
		}
		if run {
			batch.Run()
		} else {
			batch.Execute()
			batch.Wait()
		}
		for i := range n {
			if _, err := batch.Result(i); err != nil {
				fatalf(b, "%s: %v", name, err)
			}
			roots[i].Release()
		}
	}
}

// fanOutRounds is the timed loop the fan-out rows share: a started group,
// the round newRound makes for it, two warm rounds, then rounds of up to
// FanOutFlows flows until b.N flows ran. b.N counts flows.
func fanOutRounds(b *testing.B, name string, newRound func(g *reactor.Group) func(n int)) {
	g, err := StartGroup()
	if err != nil {
		fatalf(b, "%s: %v", name, err)
	}
	defer closeGroup(b, name, g)
	round := newRound(g)
	round(FanOutFlows)
	round(FanOutFlows)
	b.ReportAllocs()
	b.ResetTimer()
	for left := b.N; left > 0; {
		n := min(left, FanOutFlows)
		round(n)
		left -= n
	}
	b.StopTimer()
	reportPer(b, "flow")
}

// FanOutGoroutines: FanOut's peer, rounds of FanOutFlows goroutines, each
// storing its result, waited for with a sync.WaitGroup.
func FanOutGoroutines(b *testing.B) {
	res := make([]int, FanOutFlows)
	var wg sync.WaitGroup
	round := func(n int) {
		wg.Add(n)
		for i := range n {
			go func() { res[i] = 1; wg.Done() }()
		}
		wg.Wait()
	}
	round(FanOutFlows)
	b.ReportAllocs()
	b.ResetTimer()
	for left := b.N; left > 0; {
		n := min(left, FanOutFlows)
		round(n)
		left -= n
	}
	b.StopTimer()
	reportPer(b, "flow")
}

// MutexContendedChan: MutexContended's third peer, the Go idiom for a
// lock that goroutines wait for: a channel of one slot as a semaphore.
func MutexContendedChan(b *testing.B) {
	sem := make(chan struct{}, 1)
	runWorkers(b, "MutexContendedChan", true, 0, 0, func(w *syncWork, i int) {
		sem <- struct{}{}
		w.enter(i)
		<-sem
	})
}
