package bench

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/timerwheel"
	"golang.org/x/sys/unix"
)

// This file is our side of ReactorScenarios (impl=asyncsteps): real
// reactors placed by ReactorOptions (pinned one per CPU by default), driven
// from the benchmark goroutine as another goroutine of a server would.
// The peers are in reactor_peers.go.
//
// A flow's end is observed through a callback its last step schedules on
// the loop (as.Reactor().Immediate): it runs after the step returns and
// the flow has ended, so the root may be released or rebuilt; it then
// signals a channel, the same wake-up the peers pay.

// closeGroup closes g and fails b if a loop ended with an error.
func closeGroup(b *testing.B, name string, g *reactor.Group) {
	if err := g.Close(); err != nil {
		fatalf(b, "%s: closing the reactors: %v", name, err)
	}
}

// RealSimple: one flow at a time, each one empty step on the next reactor
// of the group, started from the benchmark goroutine (New, Add, Execute:
// the root pool's lock and a ring post), waited for on a channel and
// released. Reports the p50 and p99 of the whole op.
func RealSimple(b *testing.B) {
	g, err := StartGroup()
	if err != nil {
		fatalf(b, "RealSimple: %v", err)
	}
	defer closeGroup(b, "RealSimple", g)
	done := make(chan struct{}, 1)
	ended := func() { done <- struct{}{} }
	step := func(as *engine.Steps) { as.Reactor().Immediate(ended) }
	rs := g.Reactors()
	op := func(i int) {
		root := engine.New(rs[i%len(rs)])
		root.Add(step)
		root.Execute()
		<-done
		root.Release()
	}
	for i := range warmRounds {
		op(i)
	}
	lat := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range lat {
		t0 := time.Now()
		op(i)
		lat[i] = time.Since(t0)
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// parallelShard is one reactor's part of RealParallel: the Externals of
// its waiting flows and a barrier root that tells when they have ended.
type parallelShard struct {
	r     *reactor.Reactor
	ext   []engine.External
	n     int // Externals stored this round; written on the loop
	want  int // flows of this round on this shard; set between rounds
	ready chan struct{}
	take  engine.ExecFunc

	barrier     *engine.Steps
	barrierStep engine.ExecFunc
	runBarrier  func()
	ended       chan struct{}
}

func newParallelShard(r *reactor.Reactor, flows int) *parallelShard {
	s := &parallelShard{r: r, ext: make([]engine.External, flows), ready: make(chan struct{}, 1), ended: make(chan struct{}, 1)}
	s.take = func(as *engine.Steps) {
		s.ext[s.n] = as.External()
		s.n++
		if s.n == s.want {
			s.ready <- struct{}{}
		}
	}
	// The barrier root is executed on the loop, which queues it behind the
	// flows already made ready by the completions posted before it; its
	// step schedules the signal, which runs once the barrier has ended.
	s.barrier = engine.New(r)
	endedFn := func() { s.ended <- struct{}{} }
	s.barrierStep = func(as *engine.Steps) { as.Reactor().Immediate(endedFn) }
	s.runBarrier = func() {
		s.barrier.Add(s.barrierStep)
		s.barrier.Execute()
	}
	return s
}

// RealParallel: rounds of up to ParallelFlows flows spread round robin
// over the group's reactors, each one step that takes an External and
// waits; once all wait, the benchmark goroutine completes every External
// (a ring post each), waits until every flow has ended and releases the
// roots. b.N counts flows.
func RealParallel(b *testing.B) {
	g, err := StartGroup()
	if err != nil {
		fatalf(b, "RealParallel: %v", err)
	}
	defer closeGroup(b, "RealParallel", g)
	rs := g.Reactors()
	shards := make([]*parallelShard, len(rs))
	for i, r := range rs {
		shards[i] = newParallelShard(r, ParallelFlows/len(rs)+1)
	}
	roots := make([]*engine.Steps, ParallelFlows)
	round := func(n int) {
		for i, s := range shards {
			s.n, s.want = 0, n/len(shards)
			if i < n%len(shards) {
				s.want++
			}
		}
		for i := range n {
			s := shards[i%len(shards)]
			roots[i] = engine.New(s.r)
			roots[i].Add(s.take)
			roots[i].Execute()
		}
		for _, s := range shards {
			if s.want > 0 {
				<-s.ready
			}
		}
		for _, s := range shards {
			for _, e := range s.ext[:s.want] {
				e.Success()
			}
			s.r.Immediate(s.runBarrier)
		}
		for _, s := range shards {
			<-s.ended
		}
		for _, root := range roots[:n] {
			root.Release()
		}
	}
	round(ParallelFlows) // warm: the pools hold a round's roots and frames
	round(ParallelFlows)
	b.ReportAllocs()
	b.ResetTimer()
	for left := b.N; left > 0; {
		n := min(left, ParallelFlows)
		round(n)
		left -= n
	}
	b.StopTimer()
	for _, s := range shards {
		s.barrier.Release()
	}
	reportPer(b, "flow")
}

// counter is a count on a cache line of its own, advanced by a consumer
// and polled by the benchmark goroutine.
type counter struct {
	_ [64]byte
	n atomic.Int64
	_ [56]byte
}

func countCb(arg unsafe.Pointer, _ uint64) { (*counter)(arg).n.Add(1) }

// waitCount waits until c reaches n: a spin that yields the processor
// between checks, and fails b rather than hang when the consumer stops.
func waitCount(b *testing.B, name string, c *counter, n int64) {
	last, since := c.n.Load(), time.Now()
	for spins := 0; ; spins++ {
		v := c.n.Load()
		if v >= n {
			return
		}
		if spins&255 != 0 {
			continue
		}
		runtime.Gosched()
		if v != last {
			last, since = v, time.Now()
		} else if time.Since(since) > 10*time.Second {
			fatalf(b, "%s: consumer stuck at %d of %d", name, v, n)
			return
		}
	}
}

// Submit: b.N callbacks posted (reactor.Post: a push onto the reactor's
// MPSC ring, a wake-up when the loop sleeps) from the benchmark goroutine
// to reactor 0, timed until the loop has run them all.
func Submit(b *testing.B) {
	r, stop, err := startReactor(0)
	if err != nil {
		fatalf(b, "Submit: %v", err)
	}
	defer func() {
		if err := stop(); err != nil {
			fatalf(b, "Submit: %v", err)
		}
	}()
	c := new(counter)
	arg := unsafe.Pointer(c)
	for range 1024 {
		reactor.X.Post(r, countCb, arg, 0)
	}
	waitCount(b, "Submit", c, 1024)
	c.n.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		reactor.X.Post(r, countCb, arg, 0)
	}
	waitCount(b, "Submit", c, int64(b.N))
}

// idleGap is how long each Wakeup sample leaves the consumer idle first,
// so that it is asleep (in epoll_wait, or parked on its channel) when the
// work arrives.
const idleGap = 200 * time.Microsecond

// wakeProbe is shared by a Wakeup sample's producer and its consumer: the
// consumer stores when it ran, relative to base, and signals.
type wakeProbe struct {
	base time.Time
	at   atomic.Int64
	ch   chan struct{}
}

func (p *wakeProbe) hit() {
	p.at.Store(int64(time.Since(p.base)))
	p.ch <- struct{}{}
}

func wakeCb(arg unsafe.Pointer, _ uint64) { (*wakeProbe)(arg).hit() }

// runWakeup is Wakeup's benchmark for a consumer that submit reaches: each
// op sleeps idleGap, takes t0, submits, waits; the sample is the
// consumer's own timestamp minus t0.
func runWakeup(b *testing.B, p *wakeProbe, submit func()) {
	submit() // warm up
	<-p.ch
	lat := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range lat {
		nap(idleGap)
		t0 := time.Since(p.base)
		submit()
		<-p.ch
		lat[i] = time.Duration(p.at.Load()) - t0
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// Wakeup: the latency from reactor.Post to a sleeping reactor 0 to the
// callback running on it (an eventfd write, epoll_wait returning, the
// loop's thread scheduled).
func Wakeup(b *testing.B) {
	r, stop, err := startReactor(0)
	if err != nil {
		fatalf(b, "Wakeup: %v", err)
	}
	defer func() {
		if err := stop(); err != nil {
			fatalf(b, "Wakeup: %v", err)
		}
	}()
	p := &wakeProbe{base: time.Now(), ch: make(chan struct{}, 1)}
	arg := unsafe.Pointer(p)
	runWakeup(b, p, func() { reactor.X.Post(r, wakeCb, arg, 0) })
}

// nap blocks the calling thread in nanosleep(2) for d. Not time.Sleep: the
// runtime's timers are often run by whichever thread wakes next, so a
// time.Sleep may end in step with the reactor's own timerfd wake-ups,
// which skews TimerLateness towards a full tick.
func nap(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	_ = unix.Nanosleep(&ts, nil)
}

// latenessDelay is TimerLateness's timer.
const latenessDelay = time.Millisecond

// runLateness is TimerLateness's benchmark: b.N timers of latenessDelay
// armed by arm, 0.1 to 1.1ms apart (drifting against the tick, so that
// their start falls at every phase of it), then waited for; the samples
// are how late each fired. A timer that fires early fails the benchmark.
func runLateness(b *testing.B, name string, arm func(d time.Duration, fn func())) {
	base := time.Now()
	n := b.N
	t0 := make([]time.Duration, n)
	fired := make([]time.Duration, n)
	var count counter
	// The callbacks are built before the timer starts: the allocations
	// measured are the timers' own.
	fire := make([]func(), n)
	for i := range fire {
		fire[i] = func() {
			fired[i] = time.Since(base)
			count.n.Add(1)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range n {
		nap(100*time.Microsecond + time.Duration(i*37%1000)*time.Microsecond)
		t0[i] = time.Since(base)
		arm(latenessDelay, fire[i])
	}
	waitCount(b, name, &count, int64(n))
	b.StopTimer()
	late := make([]time.Duration, n)
	for i := range late {
		late[i] = fired[i] - t0[i] - latenessDelay
		if late[i] < 0 {
			fatalf(b, "%s: a timer fired %v early", name, -late[i])
			return
		}
	}
	reportLatency(b, late)
}

// TimerLateness: reactor.Deferred(1ms) called from the benchmark goroutine
// on reactor 0 (1ms ticks: a timer is never early and at most one tick
// late, plus the wake-up).
func TimerLateness(b *testing.B) {
	r, stop, err := startReactor(0)
	if err != nil {
		fatalf(b, "TimerLateness: %v", err)
	}
	defer func() {
		if err := stop(); err != nil {
			fatalf(b, "TimerLateness: %v", err)
		}
	}()
	runLateness(b, "TimerLateness", func(d time.Duration, fn func()) { r.Deferred(d, fn) })
}

// TimerAddCancel: a timer added to a timerwheel.Wheel (the reactor's
// timers) and cancelled at once, as a step timeout is when the step ends
// first.
func TimerAddCancel(b *testing.B) {
	w := timerwheel.New(0)
	e := timerwheel.Entry{Fn: func() {}}
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		i++
		h := w.Add(1000+i&255, e)
		w.Cancel(h)
	}
	if w.Len() != 0 {
		fatalf(b, "TimerAddCancel: Len %d after the run, want 0", w.Len())
	}
}
