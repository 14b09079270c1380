package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// fanOutFlows is a round of BenchmarkFanOutManual, bench's FanOutFlows.
const fanOutFlows = 1000

func fanOutStep(as *Steps) { as.Success(Int(1)) }

// BenchmarkFanOutManual is the single-thread half of bench's reactor/FanOut:
// rounds of fanOutFlows one-step flows started from outside the loop (New,
// Add, Promise: a ring post each), run by one drive of a manual reactor,
// then each Promise waited for and each root released. b.N counts flows.
// No thread hand-off is in it: it is the instructions a flow costs, for
// callgrind.
func BenchmarkFanOutManual(b *testing.B) {
	r := reactor.NewManual()
	roots := make([]*Steps, fanOutFlows)
	ps := make([]*Promise, fanOutFlows)
	round := func(n int) {
		for i := range n {
			roots[i] = New(r)
			roots[i].Add(fanOutStep)
			ps[i] = roots[i].Promise()
		}
		r.RunUntilIdle()
		for i := range n {
			if _, err := ps[i].Wait(); err != nil {
				b.Fatal(err)
			}
			roots[i].Release()
			ps[i] = nil
		}
	}
	round(fanOutFlows)
	round(fanOutFlows)
	b.ReportAllocs()
	b.ResetTimer()
	for left := b.N; left > 0; {
		n := min(left, fanOutFlows)
		round(n)
		left -= n
	}
}

// BenchmarkFanOutBatchManual is BenchmarkFanOutManual through a Batch:
// the roots added, one Execute (one post to the reactor), one Wait, each
// Result read, each root released. b.N counts flows.
func BenchmarkFanOutBatchManual(b *testing.B) {
	r := reactor.NewManual()
	roots := make([]*Steps, fanOutFlows)
	var batch Batch
	round := func(n int) {
		for i := range n {
			roots[i] = New(r)
			roots[i].Add(fanOutStep)
			batch.Add(roots[i])
		}
		batch.Execute()
		r.RunUntilIdle()
		batch.Wait()
		for i := range n {
			if _, err := batch.Result(i); err != nil {
				b.Fatal(err)
			}
			roots[i].Release()
		}
	}
	round(fanOutFlows)
	round(fanOutFlows)
	b.ReportAllocs()
	b.ResetTimer()
	for left := b.N; left > 0; {
		n := min(left, fanOutFlows)
		round(n)
		left -= n
	}
}
