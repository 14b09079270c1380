package syncprim

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// plainNs is the last ns/op of BenchmarkUncontended/impl=plain, the
// baseline the other impl= sub-benchmarks report their overhead against
// (ns-over-plain/op). It is 0 when plain did not run (-bench filtered it
// out), and then they report no overhead.
var plainNs float64

// BenchmarkUncontended is the cost of a Sync nobody contends: one flow from
// the pool on a warm manual reactor, one step, Execute, run until idle,
// Release; impl=plain's step is empty, the others' step is
// as.Sync(obj, empty, nil). The difference is the price of entering and
// leaving the object on its fast path (goal: at most 30 ns, 0 allocs).
func BenchmarkUncontended(b *testing.B) {
	empty := func(*engine.Steps) {}
	for _, impl := range uncontendedImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			r := reactor.NewManual()
			step := empty
			if impl.obj != nil {
				obj := impl.obj(r)
				step = func(as *engine.Steps) { as.Sync(obj, empty, nil) }
			}
			op := func() {
				root := engine.New(r)
				root.Add(step)
				root.Execute()
				r.RunUntilIdle()
				root.Release()
			}
			for range 1000 {
				op()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				op()
			}
			b.StopTimer()
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if impl.obj == nil {
				plainNs = ns
			} else if plainNs > 0 {
				b.ReportMetric(ns-plainNs, "ns-over-plain/op")
			}
			if st := engine.StatsOf(r); st.FramesLive != 0 {
				b.Fatalf("%d frames live after the run", st.FramesLive)
			}
		})
	}
}

// uncontendedImpls are the sub-benchmarks of BenchmarkUncontended and
// BenchmarkUncontendedInLoop: obj is nil for plain.
var uncontendedImpls = []struct {
	name string
	obj  func(r *reactor.Reactor) engine.Sync
}{
	{"plain", nil},
	{"mutex", func(*reactor.Reactor) engine.Sync { return NewMutex(1, 0) }},
	{"throttle", func(r *reactor.Reactor) engine.Sync { return NewThrottle(r, 1<<30, time.Hour, 0) }},
	{"limiter", func(r *reactor.Reactor) engine.Sync {
		return NewLimiter(r, LimiterOptions{Concurrent: 1, Rate: 1 << 30, Period: time.Hour})
	}},
}

// plainLoopNs is BenchmarkUncontendedInLoop's plainNs.
var plainLoopNs float64

// BenchmarkUncontendedInLoop is BenchmarkUncontended without the root's
// cost: b.N iterations of a Repeat loop (1024 per flow, the flow reused),
// whose body is empty (impl=plain) or as.Sync(obj, empty, nil). The
// overhead it reports is per Sync against a plain iteration.
func BenchmarkUncontendedInLoop(b *testing.B) {
	const perFlow = 1024
	for _, impl := range uncontendedImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			r := reactor.NewManual()
			ran := 0
			body := func(*engine.Steps, int) { ran++ }
			if impl.obj != nil {
				obj := impl.obj(r)
				section := func(*engine.Steps) { ran++ }
				body = func(as *engine.Steps, _ int) { as.Sync(obj, section, nil) }
			}
			// The loop is added on the loop, by the flow's first step: built
			// off the loop, a loop's state would be a heap allocation per run.
			count := 0
			start := func(as *engine.Steps) { as.Repeat(count, body) }
			root := engine.New(r)
			defer root.Release()
			flow := func(n int) {
				count = n
				root.Add(start)
				root.Execute()
				r.RunUntilIdle()
			}
			for range 16 {
				flow(perFlow)
			}
			ran = 0
			b.ReportAllocs()
			b.ResetTimer()
			for left := b.N; left > 0; left -= perFlow {
				flow(min(left, perFlow))
			}
			b.StopTimer()
			if ran != b.N {
				b.Fatalf("%d of %d iterations ran", ran, b.N)
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if impl.obj == nil {
				plainLoopNs = ns
			} else if plainLoopNs > 0 {
				b.ReportMetric(ns-plainLoopNs, "ns-over-plain/op")
			}
		})
	}
}

// TestUncontendedLimiterAllocatesNothing completes
// TestUncontendedSyncAllocatesNothing: a Limiter's uncontended path (its
// Mutex, then its Throttle) allocates nothing either.
func TestUncontendedLimiterAllocatesNothing(t *testing.T) {
	r := reactor.NewManual()
	l := NewLimiter(r, LimiterOptions{Concurrent: 1, Rate: 1 << 30, Period: time.Hour})
	empty := func(*engine.Steps) {}
	step := func(as *engine.Steps) { as.Sync(l, empty, nil) }
	run := func() {
		root := engine.New(r)
		root.Add(step)
		root.Execute()
		r.RunUntilIdle()
		root.Release()
	}
	for range 10 {
		run()
	}
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Fatalf("%v allocs per uncontended Limiter Sync", n)
	}
}

// contendedFlows is how many flows BenchmarkContended spreads over its two
// reactors.
const contendedFlows = 8

// contended is BenchmarkContended's fixture: contendedFlows flows on a group
// of two real reactors, each a loop of as.Sync(m, section) on one Mutex(1)
// until the section has been entered target times in all.
type contended struct {
	g     *reactor.Group
	m     *Mutex
	roots []*engine.Steps
	start []engine.ExecFunc // per flow: the step that starts its loop
	done  engine.ExecFunc
	ended func()
	wg    sync.WaitGroup

	target  int64
	total   atomic.Int64 // entries counted; written only inside the section
	inside  atomic.Int32
	overlap atomic.Bool // two flows were inside at once
	per     []int64     // entries by flow, each written only by its own flow
}

func newContended(b *testing.B) *contended {
	g, err := reactor.NewGroup(2, reactor.Options{CPU: -1})
	if err != nil {
		b.Skipf("no real reactor here: %v", err)
	}
	g.Start()
	c := &contended{g: g, m: NewMutex(1, 0), per: make([]int64, contendedFlows)}
	// The flow ends after its last step returns, and a root may be built
	// again only once its flow has ended: the last step posts the signal
	// to its loop, where it runs after the flow's turn.
	c.ended = func() { c.wg.Done() }
	c.done = func(as *engine.Steps) { as.Reactor().Immediate(c.ended) }
	for i := range contendedFlows {
		section := func(*engine.Steps) {
			if c.inside.Add(1) != 1 {
				c.overlap.Store(true)
			}
			if n := c.total.Load(); n < c.target {
				c.total.Store(n + 1)
				c.per[i]++
			}
			c.inside.Add(-1)
		}
		body := func(as *engine.Steps) {
			if c.total.Load() >= c.target {
				as.Break()
			}
			as.Sync(c.m, section, nil)
		}
		// The loop is added on the loop, by the flow's first step: built
		// off the loop, a Loop's state would be a heap allocation per run.
		c.start = append(c.start, func(as *engine.Steps) { as.Loop(body) })
		c.roots = append(c.roots, engine.New(g.Next()))
	}
	return c
}

// round runs every flow until the section has been entered n times in all.
func (c *contended) round(n int) {
	c.total.Store(0)
	c.target = int64(n)
	clear(c.per)
	c.wg.Add(len(c.roots))
	for i, root := range c.roots {
		root.Add(c.start[i])
		root.Add(c.done)
		root.Execute()
	}
	c.wg.Wait()
}

func (c *contended) close() error {
	for _, root := range c.roots {
		root.Release()
	}
	return c.g.Close()
}

// BenchmarkContended: contendedFlows flows on two real reactors hammer one
// Mutex(1) with an empty section: b.N entries in all. It reports entries
// per second (ops/s) and fairness as the ratio of the most to the fewest
// entries a flow made (max/min-entries: 1 is perfectly fair). Every waiter
// is resumed on its own reactor, so a handover from one reactor to the
// other is a post to the waiter's loop (and a wake-up when it sleeps).
func BenchmarkContended(b *testing.B) {
	c := newContended(b)
	c.round(10000) // warm the pools up, on both reactors
	// A garbage collection now rather than during the measured part, then
	// a few short rounds: a collection empties the runtime's caches of the
	// records a parked goroutine needs (sudogs), and the benchmark
	// goroutine's first wait on each P would allocate one.
	runtime.GC()
	for range 4 {
		c.round(contendedFlows)
	}
	b.ReportAllocs()
	b.ResetTimer()
	c.round(b.N)
	b.StopTimer()
	if got := c.total.Load(); got != int64(b.N) {
		b.Fatalf("%d entries, want %d", got, b.N)
	}
	if c.overlap.Load() {
		b.Fatal("two flows were inside a Mutex(1) at once")
	}
	if s := c.m.Stats(); s != (Stats{}) {
		b.Fatalf("stats after the run: %+v", s)
	}
	lo, hi := c.per[0], c.per[0]
	for _, n := range c.per {
		lo, hi = min(lo, n), max(hi, n)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	if lo > 0 {
		b.ReportMetric(float64(hi)/float64(lo), "max/min-entries")
	} else if b.N >= 100*contendedFlows {
		b.ReportMetric(float64(hi), "max/min-entries") // a flow never got in
	}
	if err := c.close(); err != nil {
		b.Fatal(err)
	}
}
