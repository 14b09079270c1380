//go:build linux

package bench

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// BenchmarkFanOutHandOff asks what handing a fan-out's starts to loops
// running beside the caller would buy (issue 19, fan5-round13.md), before
// anyone builds the hand-off: FanOut's shape with the loops kept awake for
// free (Options.Spin fixed, one no-op post per round wakes them), so the
// caller's starts go through the ring to a loop on another CPU instead of
// the direct start (reactor.X.RunParked). It is an optimistic bound for
// any burst hand-off: no burst test, no wake-up per burst, no spin to
// learn. Besides wall ns per flow it reports the process's CPU per flow
// (utime+stime), the calling thread's own (the benchmark goroutine is
// locked to it), the loop threads' (each reads its own clock), and loop
// wake-ups per 1,000 flows.
//
//	direct      FanOut as it runs today: every start on the caller
//	awake1      reactor 0's loop awake: its starts go to its ring
//	awakeAll    every loop awake: every start goes to a ring
//	batch32     FanOut's flows as engine.Batch sets of 32 (no Promise), loops parked
//	batch32w1   batch32 with reactor 0's loop awake
//	exec        FanOut's shape with plain Execute (no Promise), loops parked
//	execw1      exec with reactor 0's loop awake
//	spinner     direct with a goroutine spinning on a word of its own
//	            beside the caller: what a busy second CPU alone costs the
//	            caller (a shared core, a hypervisor), without the hand-off
//
// Run: go test -run XXX -bench FanOutHandOff -benchtime 200000x
// (BENCH_REACTORS=N for N reactors on this machine's CPUs).
func BenchmarkFanOutHandOff(b *testing.B) {
	const spin = 50 * time.Microsecond
	b.Run("direct", func(b *testing.B) { handOffPromises(b, 0, 0) })
	b.Run("awake1", func(b *testing.B) { handOffPromises(b, spin, 1) })
	b.Run("awakeAll", func(b *testing.B) { handOffPromises(b, spin, CPUs) })
	b.Run("batch32", func(b *testing.B) { handOffBatches(b, 0, 0, 32) })
	b.Run("batch32w1", func(b *testing.B) { handOffBatches(b, spin, 1, 32) })
	b.Run("exec", func(b *testing.B) { handOffExec(b, 0, 0) })
	b.Run("execw1", func(b *testing.B) { handOffExec(b, spin, 1) })
	b.Run("spinner", func(b *testing.B) {
		var stop atomic.Bool
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			for n := 0; !stop.Load(); n++ {
			}
			close(done)
		}()
		handOffPromises(b, 0, 0)
		stop.Store(true)
		<-done
	})
}

// noopTask is the post that wakes a loop.
func noopTask(unsafe.Pointer, uint64) {}

// wakeLoops posts a no-op to the first n reactors of g: a parked loop
// wakes, and with a fixed Spin stays awake while starts keep coming.
func wakeLoops(g *reactor.Group, n int) {
	rs := g.Reactors()
	for i := range min(n, len(rs)) {
		reactor.X.Post(rs[i], noopTask, nil, 0)
	}
}

// handOffPromises is FanOut's round (New, Add, Promise; then Wait and
// Release each) with the first wake loops woken at the start of each round.
func handOffPromises(b *testing.B, spin time.Duration, wake int) {
	g, err := StartGroupSpin(spin)
	if err != nil {
		b.Fatal(err)
	}
	defer closeGroup(b, "FanOutHandOff", g)
	round := promiseRound(b, "FanOutHandOff", g)
	handOffRounds(b, g, func(n int) {
		wakeLoops(g, wake)
		round(n)
	})
}

// handOffBatches is FanOutBatch's round in sets of k flows, each set
// executed as soon as it is built.
func handOffBatches(b *testing.B, spin time.Duration, wake, k int) {
	g, err := StartGroupSpin(spin)
	if err != nil {
		b.Fatal(err)
	}
	defer closeGroup(b, "FanOutHandOff", g)
	roots := make([]*engine.Steps, FanOutFlows)
	batches := make([]engine.Batch, FanOutFlows/k+1)
	handOffRounds(b, g, func(n int) {
		wakeLoops(g, wake)
		nb := 0
		for i := range n {
			roots[i] = engine.New(g.Next())
			roots[i].Add(callStep)
			batches[nb].Add(roots[i])
			if (i+1)%k == 0 || i == n-1 {
				batches[nb].Execute()
				nb++
			}
		}
		for j := range nb {
			batches[j].Wait()
		}
		for i := range n {
			if _, err := batches[i/k].Result(i % k); err != nil {
				b.Fatal(err)
			}
			roots[i].Release()
		}
	})
}

// handOffExec is FanOut's round with plain Execute: each start a direct
// turn on the caller in which the one-step flow ends; no Promise.
func handOffExec(b *testing.B, spin time.Duration, wake int) {
	g, err := StartGroupSpin(spin)
	if err != nil {
		b.Fatal(err)
	}
	defer closeGroup(b, "FanOutHandOff", g)
	roots := make([]*engine.Steps, FanOutFlows)
	handOffRounds(b, g, func(n int) {
		wakeLoops(g, wake)
		for i := range n {
			roots[i] = engine.New(g.Next())
			roots[i].Add(callStep)
			roots[i].Execute()
		}
		for i := range n {
			roots[i].Release()
		}
	})
}

// threadCPU is a task that reads its loop thread's CPU time into arg
// (*loopCPUProbe) and says so.
func threadCPU(arg unsafe.Pointer, _ uint64) {
	p := (*loopCPUProbe)(arg)
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err == nil {
		p.ns = ts.Nano()
	}
	p.done <- struct{}{}
}

// loopCPUProbe carries threadCPU's answer.
type loopCPUProbe struct {
	ns   int64
	done chan struct{}
}

// loopsCPU is the CPU time the loop threads of g have used: each loop
// reads its own thread's clock (a post, which wakes a parked loop once).
func loopsCPU(b *testing.B, g *reactor.Group) (ns int64) {
	p := loopCPUProbe{done: make(chan struct{})}
	for _, r := range g.Reactors() {
		if !reactor.X.Post(r, threadCPU, unsafe.Pointer(&p), 0) {
			b.Fatal("FanOutHandOff: post refused")
		}
		<-p.done
		ns += p.ns
	}
	return ns
}

// handOffRounds runs round over b.N flows, as fanOutRounds, on a locked
// thread, and reports wall, process CPU, the calling thread's CPU, the
// loop threads' CPU and loop wake-ups per flow.
func handOffRounds(b *testing.B, g *reactor.Group, round func(n int)) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	round(FanOutFlows)
	round(FanOutFlows)
	wakeups := func() (n uint64) {
		for _, r := range g.Reactors() {
			n += r.LoopMetrics().Wakeups
		}
		return n
	}
	cpu := func(who int) int64 {
		var ru unix.Rusage
		if err := unix.Getrusage(who, &ru); err != nil {
			b.Fatal(err)
		}
		return ru.Utime.Nano() + ru.Stime.Nano()
	}
	l0 := loopsCPU(b, g)
	// The probe woke every loop: let them park again, as a round finds
	// them (with GOMAXPROCS 1 a round that never blocks would otherwise
	// keep them from ever parking).
	time.Sleep(time.Millisecond)
	w0, p0, t0 := wakeups(), cpu(unix.RUSAGE_SELF), cpu(unix.RUSAGE_THREAD)
	b.ResetTimer()
	for left := b.N; left > 0; {
		n := min(left, FanOutFlows)
		round(n)
		left -= n
	}
	b.StopTimer()
	w1, p1, t1 := wakeups(), cpu(unix.RUSAGE_SELF), cpu(unix.RUSAGE_THREAD)
	l1 := loopsCPU(b, g)
	n := float64(b.N)
	b.ReportMetric(float64(p1-p0)/n, "cpu-ns/flow")
	b.ReportMetric(float64(t1-t0)/n, "caller-ns/flow")
	b.ReportMetric(float64(l1-l0)/n, "loops-ns/flow")
	b.ReportMetric(float64(w1-w0)/n*1000, "wakes/kflow")
}
