//go:build linux

package reactor_test

// Benchmarks of the real (threaded) reactor: how fast other goroutines can
// hand it work, how long a sleeping loop takes to wake, and how late its
// timers fire. Each sub-benchmark is named by parameter (impl=, producers=,
// d=) so that benchstat can compare runs.
//
//	go test -run '^$' -bench 'Submit|Wakeup|Lateness' -benchmem -count 3 ./reactor
//
// BenchmarkSubmit puts the reactor beside the obvious alternatives: a
// buffered channel drained by a goroutine locked to its thread, and gnet's
// own task queue (netpoll.Poller.Trigger), the mechanism the reactor's
// poller comes from. BenchmarkWakeup and BenchmarkTimerLateness take one
// sample per op and report percentiles as metrics; their ns/op includes the
// idle time each op leaves the loop to fall asleep, so read the metrics, not
// ns/op. With -benchtime 1x (what CI runs) they take a single sample.

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	gerrors "github.com/panjf2000/gnet/v2/pkg/errors"
	"github.com/panjf2000/gnet/v2/pkg/netpoll"
	"github.com/panjf2000/gnet/v2/pkg/queue"
	"golang.org/x/sys/unix"

	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// counter is a cache line of its own: the consumer increments it, the
// benchmark goroutine polls it.
type counter struct {
	_ [64]byte
	n atomic.Int64
	_ [56]byte
}

// countCb is the static callback every submission runs: one atomic add.
func countCb(arg unsafe.Pointer, _ uint64) { (*counter)(arg).n.Add(1) }

// waitCount waits until c reaches n: it spins for up to 50µs, then yields
// between checks (yielding at once wakes idle Ps through the runtime and
// disturbs the consumer it waits for). It fails b instead of hanging if
// the consumer stops making progress.
func waitCount(b *testing.B, c *counter, n int64) {
	if c.n.Load() >= n {
		return
	}
	start := time.Now()
	last, since := c.n.Load(), start
	for spins := 1; ; spins++ {
		v := c.n.Load()
		if v >= n {
			return
		}
		if spins&255 != 0 {
			continue
		}
		now := time.Now()
		if now.Sub(start) < 50*time.Microsecond {
			continue
		}
		runtime.Gosched()
		if v != last {
			last, since = v, now
		} else if now.Sub(since) > 10*time.Second {
			b.Fatalf("consumer stuck at %d of %d items", v, n)
		}
	}
}

// submitImpl is one way to run work on another thread: start returns a
// function that submits one item (the item increments c when it runs) and
// a function that stops the consumer.
type submitImpl struct {
	name  string
	start func(b *testing.B, c *counter) (submit func(), stop func())
}

// item is what impl=chan carries: the same triple Post takes.
type item struct {
	cb  func(unsafe.Pointer, uint64)
	arg unsafe.Pointer
	aux uint64
}

var submitImpls = []submitImpl{
	{"reactor", func(b *testing.B, c *counter) (func(), func()) {
		r := reactortest.Start(b, reactor.Options{CPU: -1})
		arg := unsafe.Pointer(c)
		return func() { reactor.X.Post(r, countCb, arg, 0) }, nil
	}},
	{"reactor-immediate", func(b *testing.B, c *counter) (func(), func()) {
		r := reactortest.Start(b, reactor.Options{CPU: -1})
		fn := func() { c.n.Add(1) }
		return func() { r.Immediate(fn) }, nil
	}},
	{"chan", func(b *testing.B, c *counter) (func(), func()) {
		ch := make(chan item, reactor.DefaultRingSize)
		stopped := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for it := range ch {
				it.cb(it.arg, it.aux)
			}
			close(stopped)
		}()
		arg := unsafe.Pointer(c)
		return func() { ch <- item{countCb, arg, 0} }, func() { close(ch); <-stopped }
	}},
	{"gnet-trigger", func(b *testing.B, c *counter) (func(), func()) {
		p, err := netpoll.OpenPoller()
		if err != nil {
			b.Fatal(err)
		}
		stopped := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			stopped <- p.Polling(func(int, netpoll.IOEvent, netpoll.IOFlags) error { return nil })
		}()
		fn := func(any) error { c.n.Add(1); return nil }
		stop := func() {
			_ = p.Trigger(queue.HighPriority, func(any) error { return gerrors.ErrEngineShutdown }, nil)
			if err := <-stopped; err != nil && !errors.Is(err, gerrors.ErrEngineShutdown) {
				b.Errorf("Polling: %v", err)
			}
			_ = p.Close()
		}
		return func() { _ = p.Trigger(queue.HighPriority, fn, nil) }, stop
	}},
}

// BenchmarkSubmit measures throughput: b.N items submitted from other
// goroutines into one running consumer, timed until the consumer has run
// them all. producers=1 submits from the benchmark goroutine itself;
// producers=4 from four goroutines, b.N items between them.
func BenchmarkSubmit(b *testing.B) {
	for _, impl := range submitImpls {
		for _, producers := range []int{1, 4} {
			b.Run(fmt.Sprintf("impl=%s/producers=%d", impl.name, producers), func(b *testing.B) {
				c := new(counter)
				submit, stop := impl.start(b, c)
				if stop != nil {
					defer stop()
				}
				// Warm up: the consumer is running and its queue allocated.
				for i := 0; i < 1024; i++ {
					submit()
				}
				waitCount(b, c, 1024)
				c.n.Store(0)
				b.ReportAllocs()
				b.ResetTimer()
				if producers == 1 {
					for i := 0; i < b.N; i++ {
						submit()
					}
				} else {
					var wg sync.WaitGroup
					for p := 0; p < producers; p++ {
						n := b.N / producers
						if p < b.N%producers {
							n++
						}
						wg.Add(1)
						go func() {
							defer wg.Done()
							for i := 0; i < n; i++ {
								submit()
							}
						}()
					}
					wg.Wait()
				}
				waitCount(b, c, int64(b.N))
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
			})
		}
	}
}

// idleGap is how long each wake-up sample leaves the consumer idle first,
// so that it is asleep (blocked in epoll_wait or on its channel) when the
// work arrives.
const idleGap = 200 * time.Microsecond

// nap blocks the calling thread in nanosleep(2) for d. Not time.Sleep: the
// runtime's netpoller sleeps in whole milliseconds when nothing else is
// due, and its timers are often run by whichever thread wakes next, so a
// time.Sleep ends in step with the reactor's own timerfd wake-ups. That
// phase-locks t0 to just after a tick boundary and skews the lateness
// figures towards a full tick. A signal (the runtime's preemption) may cut
// a nap short, which is harmless here.
func nap(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	_ = unix.Nanosleep(&ts, nil)
}

// wakeProbe is shared by a sample's producer and its consumer: the consumer
// stores when it ran, relative to base, and signals.
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

type wakeImpl struct {
	name string
	// start returns a function that submits one probe.hit to the consumer.
	start func(b *testing.B, p *wakeProbe) func()
}

var wakeImpls = []wakeImpl{
	{"reactor", func(b *testing.B, p *wakeProbe) func() {
		r := reactortest.Start(b, reactor.Options{CPU: -1})
		arg := unsafe.Pointer(p)
		return func() { reactor.X.Post(r, wakeCb, arg, 0) }
	}},
	{"chan", func(b *testing.B, p *wakeProbe) func() {
		ch := make(chan struct{}, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for range ch {
				p.hit()
			}
		}()
		b.Cleanup(func() { close(ch) })
		return func() { ch <- struct{}{} }
	}},
	{"gnet-trigger", func(b *testing.B, p *wakeProbe) func() {
		poller, err := netpoll.OpenPoller()
		if err != nil {
			b.Fatal(err)
		}
		stopped := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			_ = poller.Polling(func(int, netpoll.IOEvent, netpoll.IOFlags) error { return nil })
			close(stopped)
		}()
		b.Cleanup(func() {
			_ = poller.Trigger(queue.HighPriority, func(any) error { return gerrors.ErrEngineShutdown }, nil)
			<-stopped
			_ = poller.Close()
		})
		fn := func(any) error { p.hit(); return nil }
		return func() { _ = poller.Trigger(queue.HighPriority, fn, nil) }
	}},
}

// BenchmarkWakeup measures the latency from submitting one item to a
// sleeping consumer to that item starting to run on it. Each op is one
// sample: sleep idleGap, take t0, submit, wait for the item to signal; the
// latency is the consumer's own timestamp minus t0, so neither the sleep
// nor the benchmark goroutine's own wake-up is counted. Reported as
// p50-µs, p99-µs and max-µs over b.N samples (a few thousand per second of
// -benchtime); ns/op is dominated by the sleep and means nothing here.
// impl=chan and impl=gnet-trigger are the same probe on the alternatives
// (the chan consumer is locked to its thread like the loop, so its wake-up
// includes the runtime's hand-off to a locked thread).
func BenchmarkWakeup(b *testing.B) {
	for _, impl := range wakeImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			p := &wakeProbe{base: time.Now(), ch: make(chan struct{}, 1)}
			submit := impl.start(b, p)
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
			reportPercentiles(b, lat, "")
		})
	}
}

// reportPercentiles reports the p50, p99 and max of samples, in µs, as
// metrics named prefix+"p50-µs" and so on. It sorts samples.
func reportPercentiles(b *testing.B, samples []time.Duration, prefix string) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(samples[len(samples)/2]), prefix+"p50-µs")
	b.ReportMetric(us(samples[len(samples)*99/100]), prefix+"p99-µs")
	b.ReportMetric(us(samples[len(samples)-1]), prefix+"max-µs")
}

// BenchmarkTimerLateness measures how late a timer fires on a running
// reactor: actual delay minus d, for d in {1ms, 5ms, 20ms}. Each op
// schedules one timer and the benchmark waits for all of them at the end;
// the timers overlap: ops are 0.1 to 1.1ms apart, each after a nap whose
// length drifts against the tick, so t0 falls at all phases of the tick and
// the expected lateness is uniform over one tick (p50 about 500µs with the
// default 1ms tick) plus the wake-up latency.
//
//   - impl=reactor-remote: Deferred called from the benchmark goroutine, t0
//     taken just before the call;
//   - impl=reactor-loop: Deferred called inside an Immediate callback, t0
//     taken on the loop just before the call;
//   - impl=afterfunc: time.AfterFunc, the obvious alternative (no tick; its
//     callback runs on a new goroutine), as a baseline for this machine's
//     scheduling noise.
//
// Reported: p50-µs, p99-µs and max-µs of lateness, and early (firings
// before t0+d). The reactor's contract is never early and at most one tick
// late plus wake-up latency; any early firing fails the benchmark.
func BenchmarkTimerLateness(b *testing.B) {
	for _, impl := range []string{"reactor-remote", "reactor-loop", "afterfunc"} {
		for _, d := range []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
			b.Run(fmt.Sprintf("impl=%s/d=%v", impl, d), func(b *testing.B) {
				benchLateness(b, impl, d)
			})
		}
	}
}

func benchLateness(b *testing.B, impl string, d time.Duration) {
	var r *reactor.Reactor
	if impl != "afterfunc" {
		r = reactortest.Start(b, reactor.Options{CPU: -1})
	}
	base := time.Now()
	n := b.N
	t0 := make([]time.Duration, n)
	fired := make([]time.Duration, n)
	var count counter
	// The callbacks are built before the timer starts: the allocations
	// measured are the timers' own.
	fire := make([]func(), n)
	sched := make([]func(), n)
	for i := range fire {
		fire[i] = func() {
			fired[i] = time.Since(base)
			count.n.Add(1)
		}
		sched[i] = func() {
			t0[i] = time.Since(base)
			r.Deferred(d, fire[i])
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < n; i++ {
		// 100µs..1.1ms, drifting: spreads t0 over the phases of the tick.
		nap(100*time.Microsecond + time.Duration(i*37%1000)*time.Microsecond)
		switch impl {
		case "reactor-loop":
			r.Immediate(sched[i])
		case "reactor-remote":
			t0[i] = time.Since(base)
			r.Deferred(d, fire[i])
		default:
			t0[i] = time.Since(base)
			time.AfterFunc(d, fire[i])
		}
	}
	deadline := time.Now().Add(d + 10*time.Second)
	for count.n.Load() < int64(n) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d timers fired", count.n.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	late := make([]time.Duration, n)
	early := 0
	for i := range late {
		late[i] = fired[i] - t0[i] - d
		if late[i] < 0 {
			early++
		}
	}
	b.ReportMetric(float64(early), "early")
	reportPercentiles(b, late, "")
	if early > 0 {
		slices.Sort(late)
		b.Fatalf("%d of %d timers fired early (earliest %v before t0+%v)", early, n, -late[0], d)
	}
}
