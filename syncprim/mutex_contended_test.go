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

// TestMutexContendedPinnedNoHang is the benchmark syncprim/MutexContended
// as a test: 8 flows on two pinned real reactors loop through one
// NewMutex(1, 0), the section synchronous, rounds of many entries with
// the roots reused. That benchmark was reported to hang when pinned; what
// it showed was slow runs (every hand-over to a flow of the other reactor
// may cost an eventfd write and a wake-up), not a lost one. A lost
// hand-over (or a lost wake-up of a loop) stops the entries for good: a
// round that makes none for stall fails with the goroutines' stacks
// instead of hanging the test.
func TestMutexContendedPinnedNoHang(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs to pin two reactors")
	}
	g, err := reactor.NewGroup(2, reactor.Options{Pin: true, CPU: 0})
	if err != nil {
		t.Skipf("no pinned real reactors here: %v", err)
	}
	g.Start()
	const workers = 8
	mu := NewMutex(1, 0)
	var total, target atomic.Int64
	var inside atomic.Int32
	var wg sync.WaitGroup
	ended := func() { wg.Done() }
	done := func(as *engine.Steps) { as.Reactor().Immediate(ended) }
	section := func(*engine.Steps) {
		if inside.Add(1) != 1 {
			t.Error("two flows inside a Mutex(1)")
		}
		total.Add(1)
		inside.Add(-1)
	}
	body := func(as *engine.Steps) {
		if total.Load() >= target.Load() {
			as.Break()
		}
		as.Sync(mu, section, nil)
	}
	start := func(as *engine.Steps) { as.Loop(body) }
	var roots [workers]*engine.Steps
	for i := range roots {
		roots[i] = engine.New(g.Next())
	}
	defer func() {
		// After a stall the flows still run: Close ends them first.
		if t.Failed() {
			_ = g.Close()
		}
		for _, r := range roots {
			r.Release()
		}
		if err := g.Close(); err != nil {
			t.Errorf("group close: %v", err)
		}
	}()
	const stall = 10 * time.Second
	// About a second by default; look longer with -count.
	rounds, perRound := 10, int64(10000)
	if testing.Short() {
		rounds = 3
	}
	for round := range rounds {
		total.Store(0)
		target.Store(perRound)
		wg.Add(workers)
		for _, r := range roots {
			r.Add(start)
			r.Add(done)
			r.Execute()
		}
		finished := make(chan struct{})
		go func() { wg.Wait(); close(finished) }()
		// A slow hand-over (the next waiter's reactor asleep, its thread
		// not yet scheduled) costs microseconds, rarely milliseconds: a
		// round that makes no entry for stall is lost, not slow.
		last, idle := total.Load(), 0
		tick := time.NewTicker(time.Second)
	wait:
		for {
			select {
			case <-finished:
				break wait
			case <-tick.C:
				if n := total.Load(); n != last {
					last, idle = n, 0
					continue
				}
				if idle++; time.Duration(idle)*time.Second >= stall {
					tick.Stop()
					buf := make([]byte, 1<<20)
					buf = buf[:runtime.Stack(buf, true)]
					t.Fatalf("round %d: no entry for %v: %d of %d entries, mutex %+v\n%s", round, stall, total.Load(), perRound, mu.Stats(), buf)
				}
			}
		}
		tick.Stop()
	}
	if s := mu.Stats(); s != (Stats{}) {
		t.Errorf("stats at the end: %+v, want zero", s)
	}
}
