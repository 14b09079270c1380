//go:build linux

package engine

// The engine scenarios of engine_bench_test.go on a REAL reactor (its own
// thread, pinned to CPU 0), driven from another goroutine: the benchmark
// goroutine builds and executes the roots and completes the Externals, the
// loop runs the steps. Compare with the manual-reactor numbers in one run:
//
//	go test -run '^$' -bench 'Real|Simple|ParallelExternal|ParallelWaitLoop' -benchmem -count 3 ./engine
//
// BenchmarkRealSimple ↔ BenchmarkSimple, BenchmarkRealParallel ↔
// BenchmarkParallelExternal, BenchmarkRealParallelWaitLoop ↔
// BenchmarkParallelWaitLoop.
//
// Knowing when a flow has ENDED (not just when its last step ran) matters:
// the root may be released or rebuilt only after its flow ended, and the
// last step's callback returns before the loop finishes the flow. So the
// end is observed through something that runs on the loop after the flow
// ended: a callback the last step Posts (it runs after the current drive
// returns), or a barrier root executed on the loop (it starts behind the
// flows already ready). Both allocate nothing.

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// realFlows is the number of concurrent flows of the parallel scenarios,
// as in BenchmarkParallelExternal and BenchmarkParallelWaitLoop.
const realFlows = 30000

// signal is a cache line of its own, advanced on the loop and polled by
// the benchmark goroutine.
type signal struct {
	_ [64]byte
	n atomic.Int64
	_ [56]byte
}

func signalCb(arg unsafe.Pointer, _ uint64) { (*signal)(arg).n.Add(1) }

// await waits until s reaches n: it spins for up to spinFor, then yields
// between checks; it fails b rather than hang when the loop stops making
// progress.
//
// How the driver waits changes what is measured. Yielding at once
// (runtime.Gosched after a few hundred loads) made RealSimple 24-30µs per
// op instead of 2.5-4µs: every Gosched puts the driver on the global run
// queue and wakes an idle P (futex), and those wake-ups compete with the
// loop's own. A bare spin that never yields is worse when the scheduler
// puts the driver on CPU 0 beside the pinned loop (milliseconds per op).
// The driver is left unpinned: pinned to the other CPU it was slower still.
func (s *signal) await(b *testing.B, n int64) {
	if s.n.Load() >= n {
		return
	}
	start := time.Now()
	last, since := s.n.Load(), start
	for spins := 1; ; spins++ {
		v := s.n.Load()
		if v >= n {
			return
		}
		if spins&255 != 0 {
			continue
		}
		now := time.Now()
		if now.Sub(start) < spinFor {
			continue
		}
		runtime.Gosched()
		if v != last {
			last, since = v, now
		} else if now.Sub(since) > 10*time.Second {
			b.Fatalf("loop stuck: signal at %d, want %d", v, n)
		}
	}
}

// spinFor bounds the driver's busy wait before it starts yielding.
const spinFor = 50 * time.Microsecond

// BenchmarkRealSimple: New, Add one step, Execute, wait for the end of the
// flow, Release; one flow per op, one at a time, so every op wakes the
// loop. wait=post: the step Posts (on the loop) a callback that advances a
// signal; it runs once the flow has ended, and the benchmark goroutine
// spin-waits for it: allocation-free. wait=promise: Promise().Wait(), which
// allocates the Promise and its channel.
func BenchmarkRealSimple(b *testing.B) {
	b.Run("wait=post", func(b *testing.B) {
		r := reactortest.Start(b, reactor.Options{CPU: 0, Pin: true})
		sig := new(signal)
		arg := unsafe.Pointer(sig)
		step := func(as *Steps) { reactor.X.Post(r, signalCb, arg, 0) }
		op := func(i int) {
			root := New(r)
			root.Add(step)
			root.Execute()
			sig.await(b, int64(i+1))
			root.Release()
		}
		for i := 0; i < 100; i++ {
			op(i)
		}
		sig.n.Store(0)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			op(i)
		}
	})
	b.Run("wait=promise", func(b *testing.B) {
		r := reactortest.Start(b, reactor.Options{CPU: 0, Pin: true})
		op := func() {
			root := New(r)
			root.Add(emptyStep)
			if _, err := root.Promise().Wait(); err != nil {
				b.Fatal(err)
			}
			root.Release()
		}
		for i := 0; i < 100; i++ {
			op()
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			op()
		}
	})
}

// externals collects, on the loop, the Externals of waiting steps, for the
// benchmark goroutine. The loop writes ext[n] then publishes n+1; the
// benchmark goroutine reads ext[i] only for i below what it loaded.
type externals struct {
	ext []External
	sig signal
}

func (x *externals) take(as *Steps) {
	n := x.sig.n.Load()
	x.ext[n] = as.External()
	x.sig.n.Store(n + 1)
}

// barrier tells, without allocating, when every flow made ready before it
// has run: run posts a callback that executes a prebuilt root ON the loop,
// which queues it behind the flows already ready (after every result
// posted before it was delivered); its step Posts a signal, which runs once
// that root has ended, so the barrier root can be rebuilt the next time.
type barrier struct {
	r    *reactor.Reactor
	root *Steps
	step ExecFunc
	sig  signal
	runs int64
}

func newBarrier(r *reactor.Reactor) *barrier {
	br := &barrier{r: r, root: New(r)}
	arg := unsafe.Pointer(&br.sig)
	br.step = func(as *Steps) { reactor.X.Post(r, signalCb, arg, 0) }
	return br
}

func executeCb(arg unsafe.Pointer, _ uint64) { (*Steps)(arg).Execute() }

func (br *barrier) run(b *testing.B) {
	br.root.Add(br.step)
	reactor.X.Post(br.r, executeCb, unsafe.Pointer(br.root), 0)
	br.runs++
	br.sig.await(b, br.runs)
}

// checkIdle fails b unless every step frame went back to the engine's
// pools, asked on the loop. (RootsLive counts roots not Released, so the
// caller says how many it still holds.)
func checkIdle(b *testing.B, r *reactor.Reactor, frames, roots int) {
	ch := make(chan Stats, 1)
	r.Immediate(func() { ch <- StatsOf(r) })
	if s := <-ch; s.FramesLive != frames || s.FlowsLive != 0 || s.RootsLive != roots {
		b.Fatalf("engine not idle: %+v, want %d frames live, %d roots live", s, frames, roots)
	}
}

// BenchmarkRealParallel: 30,000 flows each wait on an External; once all
// wait, the benchmark goroutine completes them all, waits for every flow
// to end (a barrier) and releases the roots. ns/op and ns/flow are per
// flow (as in BenchmarkParallelExternal, b.N is rounded up to whole rounds
// of 30,000; ns/flow divides by the flows actually run).
func BenchmarkRealParallel(b *testing.B) {
	r := reactortest.Start(b, reactor.Options{CPU: 0, Pin: true})
	x := &externals{ext: make([]External, realFlows)}
	step := x.take
	roots := make([]*Steps, realFlows)
	br := newBarrier(r)
	round := func() {
		x.sig.n.Store(0)
		for i := range roots {
			roots[i] = New(r)
			roots[i].Add(step)
			roots[i].Execute()
		}
		x.sig.await(b, realFlows)
		for i := range x.ext {
			x.ext[i].Success()
		}
		br.run(b)
		for _, root := range roots {
			root.Release()
		}
	}
	round() // warm: the pools hold a round's roots and frames
	b.ReportAllocs()
	b.ResetTimer()
	rounds := 0
	for done := 0; done < b.N; done += realFlows {
		round()
		rounds++
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rounds*realFlows), "ns/flow")
	checkIdle(b, r, 0, 1) // the barrier root is still held
}

// BenchmarkRealParallelWaitLoop: 30,000 flows loop forever, each iteration
// waiting on an External; the benchmark goroutine completes the 30,000
// waiting iterations and waits until all 30,000 wait again. ns/op and
// ns/iter are per iteration (b.N rounded up to whole rounds, as in
// BenchmarkParallelWaitLoop; ns/iter divides by the iterations run).
func BenchmarkRealParallelWaitLoop(b *testing.B) {
	r := reactortest.Start(b, reactor.Options{CPU: 0, Pin: true})
	x := &externals{ext: make([]External, realFlows)}
	body := x.take
	for i := 0; i < realFlows; i++ {
		root := New(r)
		root.Loop(body)
		root.Execute()
	}
	x.sig.await(b, realFlows)
	// One round is completions 0..n-1 posted in order; the loop writes
	// ext[j] only after it delivered j+1 of them, so never a slot not yet
	// read. The counter is reset before the first completion is posted.
	round := func() {
		x.sig.n.Store(0)
		for i := range x.ext {
			x.ext[i].Success()
		}
		x.sig.await(b, realFlows)
	}
	round() // warm
	b.ReportAllocs()
	b.ResetTimer()
	rounds := 0
	for done := 0; done < b.N; done += realFlows {
		round()
		rounds++
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rounds*realFlows), "ns/iter")
}
