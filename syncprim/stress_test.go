package syncprim

import (
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Stress tests: many flows on two real reactors share one object. Each
// section waits asynchronously (an External completed from another
// goroutine, or on the flow's own loop by r.Immediate or r.Deferred(0)),
// so flows of both reactors really overlap and queue; the checks are that
// nobody is lost, the limits hold at every entry, and the object is empty
// at the end.

// stressGroup starts a group of two real reactors, closed when t ends.
func stressGroup(t *testing.T) *reactor.Group {
	t.Helper()
	g, err := reactor.NewGroup(2, reactor.Options{CPU: -1})
	if err != nil {
		t.Skipf("no real reactor here: %v", err)
	}
	g.Start()
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("group close: %v", err)
		}
	})
	return g
}

// stressFlows is how many flows, and how many sequential Syncs each, a
// stress test runs: fewer with -short.
func stressFlows() (n, m int) {
	if testing.Short() {
		return 300, 3
	}
	return 2000, 5
}

// highWater is an atomic "inside" counter that remembers its maximum.
type highWater struct {
	inside, max atomic.Int64
}

func (h *highWater) enter() int64 {
	n := h.inside.Add(1)
	for {
		m := h.max.Load()
		if n <= m || h.max.CompareAndSwap(m, n) {
			return n
		}
	}
}

func (h *highWater) leave() { h.inside.Add(-1) }

// stressRun is one stress run: n flows spread over g with Next, each doing m
// sequential as.Sync(obj, section); the section calls enter (which may fail
// the test from any goroutine), waits asynchronously, then calls leave.
type stressRun struct {
	n, m    int
	entered atomic.Int64   // sections entered, in all
	perFlow []atomic.Int32 // sections entered, by flow
	first   atomic.Int64   // time of the first entry, in ns since t0 (+1)
	last    atomic.Int64   // and of the last
	t0      time.Time
}

func (s *stressRun) stamp() {
	now := time.Since(s.t0).Nanoseconds() + 1 // never 0
	s.first.CompareAndSwap(0, now)
	for {
		l := s.last.Load()
		if now <= l || s.last.CompareAndSwap(l, now) {
			return
		}
	}
}

// span is the time between the first and the last entry.
func (s *stressRun) span() time.Duration { return time.Duration(s.last.Load() - s.first.Load()) }

func runStress(t *testing.T, g *reactor.Group, obj engine.Sync, n, m int, enter func(), leave func()) *stressRun {
	t.Helper()
	s := &stressRun{n: n, m: m, perFlow: make([]atomic.Int32, n), t0: time.Now()}
	roots := make([]*engine.Steps, n)
	promises := make([]*engine.Promise, n)
	for i := range n {
		waitStep := func(as *engine.Steps) {
			s.stamp()
			s.entered.Add(1)
			s.perFlow[i].Add(1)
			enter()
			ext := as.External()
			switch i % 8 {
			case 0, 2, 4, 6: // from another goroutine
				go ext.Success()
			case 1, 3, 5: // on the flow's loop, at once
				as.Reactor().Immediate(func() { ext.Success() })
			case 7: // on the flow's loop, on the next tick (rarely: a tick is 1ms)
				as.Reactor().Deferred(0, func() { ext.Success() })
			}
		}
		leaveStep := func(*engine.Steps) { leave() }
		section := func(as *engine.Steps) {
			as.Add(waitStep)
			as.Add(leaveStep)
		}
		root := engine.New(g.Next())
		root.Repeat(m, func(as *engine.Steps, _ int) { as.Sync(obj, section, nil) })
		roots[i] = root
	}
	for i, root := range roots {
		promises[i] = root.Promise()
	}
	deadline := time.After(60 * time.Second)
	for i, p := range promises {
		select {
		case <-p.Done():
		case <-deadline:
			t.Fatalf("flow %d of %d still running after 60s: %d of %d sections entered, stats %s",
				i, n, s.entered.Load(), n*m, statsOf(obj))
		}
		if _, err := p.Wait(); err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
	}
	if got := s.entered.Load(); got != int64(n*m) {
		t.Errorf("%d sections entered, want %d", got, n*m)
	}
	for i := range s.perFlow {
		if got := s.perFlow[i].Load(); got != int32(m) {
			t.Errorf("flow %d entered %d times, want %d", i, got, m)
		}
	}
	for _, root := range roots {
		root.Release()
	}
	return s
}

func statsOf(obj engine.Sync) string {
	switch o := obj.(type) {
	case *Mutex:
		return fmt.Sprintf("%+v", o.Stats())
	case *Throttle:
		return fmt.Sprintf("%+v", o.Stats())
	case *Limiter:
		c, r := o.Stats()
		return fmt.Sprintf("concurrency %+v, rate %+v", c, r)
	}
	return "?"
}

// eventually polls cond until it holds or a second has passed.
func eventually(cond func() bool) bool {
	for end := time.Now().Add(time.Second); ; time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

func TestStressMutex(t *testing.T) {
	g := stressGroup(t)
	n, m := stressFlows()
	mu := NewMutex(2, 0)
	var hw highWater
	runStress(t, g, mu, n, m, func() {
		if k := hw.enter(); k > 2 {
			t.Errorf("%d flows inside a Mutex(2)", k)
		}
	}, hw.leave)
	if got := hw.max.Load(); got != 2 {
		t.Errorf("at most %d flows were inside at once, want exactly 2", got)
	}
	if s := mu.Stats(); s != (Stats{}) {
		t.Errorf("stats at the end: %+v, want zero", s)
	}
}

// checkRate checks the rate bound of a throttle of max entries per period:
// periods are never shorter than period (a timer never fires early), so
// the k-th period starts at least k periods after the first entry, and
// every entry is made in one of the periods that started before it. Two
// spare periods absorb the tick of the reactor's clock.
func checkRate(t *testing.T, s *stressRun, max int, period time.Duration) {
	t.Helper()
	entries := s.entered.Load()
	periods := int64(s.span()/period) + 2
	if entries > periods*int64(max) {
		t.Errorf("%d entries in %v: more than %d per %v", entries, s.span(), max, period)
	}
	t.Logf("%d entries in %v (at most %d per %v: at least %v)",
		entries, s.span(), max, period, time.Duration((entries+int64(max)-1)/int64(max)-1)*period)
}

func TestStressThrottle(t *testing.T) {
	g := stressGroup(t)
	n, _ := stressFlows()
	n, m := n/5, 2 // the rate makes it slow: keep it under a second
	const max, period = 50, 5 * time.Millisecond
	th := NewThrottle(g.Reactors()[0], max, period, 0)
	s := runStress(t, g, th, n, m, func() {
		// Not >= 1: the period may have ended since this flow entered.
		if s := th.Stats(); s.Holders > max {
			t.Errorf("entries this period: %d, more than %d", s.Holders, max)
		}
	}, func() {})
	checkRate(t, s, max, period)
	if !eventually(func() bool { return th.Stats() == Stats{} }) {
		t.Errorf("stats after an idle period: %+v, want zero", th.Stats())
	}
}

func TestStressLimiter(t *testing.T) {
	g := stressGroup(t)
	n, _ := stressFlows()
	n, m := n/5, 2
	const max, period = 50, 5 * time.Millisecond
	l := NewLimiter(g.Reactors()[1], LimiterOptions{
		Concurrent: 2, MaxQueue: Unlimited,
		Rate: max, Period: period, Burst: Unlimited,
	})
	var hw highWater
	s := runStress(t, g, l, n, m, func() {
		if k := hw.enter(); k > 2 {
			t.Errorf("%d flows inside a Limiter of Concurrent 2", k)
		}
		if _, r := l.Stats(); r.Holders > max {
			t.Errorf("entries this period: %d, more than %d", r.Holders, max)
		}
	}, hw.leave)
	checkRate(t, s, max, period)
	if got := hw.max.Load(); got != 2 {
		t.Errorf("at most %d flows were inside at once, want exactly 2", got)
	}
	if !eventually(func() bool {
		c, r := l.Stats()
		return c == Stats{} && r == Stats{}
	}) {
		t.Errorf("stats at the end: %s, want zero", statsOf(l))
	}
}

// TestMutexFairnessOrder: 100 flows queue on a Mutex(1), executed in a
// shuffled order, each entering three times; they enter in exactly the
// order they queued, every round, since a flow that leaves queues again
// behind the others.
func TestMutexFairnessOrder(t *testing.T) {
	const flows, rounds = 100, 3
	r := reactor.NewManual()
	m := NewMutex(1, 0)
	var order []int
	var exts []engine.External
	roots := make([]*engine.Steps, flows)
	for i := range roots {
		section := func(as *engine.Steps) {
			order = append(order, i)
			exts = append(exts, as.External())
		}
		roots[i] = engine.New(r)
		roots[i].Repeat(rounds, func(as *engine.Steps, _ int) { as.Sync(m, section, nil) })
	}
	perm := rand.New(rand.NewSource(1)).Perm(flows)
	var ps []*engine.Promise
	for _, i := range perm {
		ps = append(ps, roots[i].Promise())
	}
	r.RunUntilIdle()
	if s := m.Stats(); s.Holders != 1 || s.Queued != flows-1 {
		t.Fatalf("stats once all queued: %+v", s)
	}
	for k := 0; k < flows*rounds; k++ {
		if len(exts) != k+1 {
			t.Fatalf("after %d sections: %d entered, want %d", k, len(exts), k+1)
		}
		if want := perm[k%flows]; order[k] != want {
			t.Fatalf("entry %d: flow %d, want flow %d (queue order %v, entered %v)", k, order[k], want, perm, order)
		}
		if !exts[k].Success() {
			t.Fatalf("entry %d: section not waiting", k)
		}
		r.RunUntilIdle()
	}
	for i, p := range ps {
		if _, err := p.Wait(); err != nil {
			t.Fatalf("flow %d: %v", perm[i], err)
		}
	}
	if s := m.Stats(); s != (Stats{}) {
		t.Fatalf("stats at the end: %+v", s)
	}
}

// TestStressCancel: flows on two reactors share each object while a third
// of them are canceled from another goroutine and another third time out,
// at random moments: waiting, holding, or being handed a slot. The limits
// hold throughout, every flow ends, and each object ends empty.
func TestStressCancel(t *testing.T) {
	g := stressGroup(t)
	n, m := stressFlows()
	n /= 2
	type object struct {
		name string
		obj  engine.Sync
		max  int64 // concurrency limit; 0: none
		zero func() bool
	}
	mu := NewMutex(2, 0)
	th := NewThrottle(g.Reactors()[0], 20, time.Millisecond, 0)
	l := NewLimiter(g.Reactors()[1], LimiterOptions{Concurrent: 2, MaxQueue: Unlimited, Rate: 20, Period: time.Millisecond, Burst: Unlimited})
	objs := []object{
		{"mutex", mu, 2, func() bool { return mu.Stats() == Stats{} }},
		{"throttle", th, 0, func() bool { return th.Stats() == Stats{} }},
		{"limiter", l, 2, func() bool {
			c, r := l.Stats()
			return c == Stats{} && r == Stats{}
		}},
	}
	for _, o := range objs {
		t.Run(o.name, func(t *testing.T) {
			var hw highWater
			rng := rand.New(rand.NewSource(2))
			roots := make([]*engine.Steps, n)
			for i := range roots {
				waitStep := func(as *engine.Steps) {
					if k := hw.enter(); o.max > 0 && k > o.max {
						t.Errorf("%d flows inside, limit %d", k, o.max)
					}
					ext := as.External()
					if i%2 == 0 {
						go ext.Success()
					} else {
						as.Reactor().Immediate(func() { ext.Success() })
					}
				}
				section := func(as *engine.Steps) {
					as.SetCancel(func(*engine.Steps) { hw.leave() })
					as.Add(waitStep)
					as.Add(func(*engine.Steps) { hw.leave() })
				}
				timeout := time.Duration(0)
				if i%3 == 1 {
					timeout = time.Duration(1+rng.Intn(20)) * time.Millisecond
				}
				root := engine.New(g.Next())
				root.Repeat(m, func(as *engine.Steps, _ int) {
					as.Add(func(as *engine.Steps) {
						if timeout > 0 {
							as.SetTimeout(timeout)
						}
						as.Sync(o.obj, section, nil)
					})
				})
				roots[i] = root
			}
			ps := make([]*engine.Promise, n)
			for i, root := range roots {
				ps[i] = root.Promise()
			}
			delays := make([]time.Duration, n)
			for i := range delays {
				delays[i] = time.Duration(rng.Intn(20000)) * time.Microsecond
			}
			var wg sync.WaitGroup
			for i, root := range roots {
				if i%3 != 2 {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(delays[i])
					root.Cancel()
				}()
			}
			wg.Wait()
			deadline := time.After(60 * time.Second)
			var ok, canceled, timedOut int
			for i, p := range ps {
				select {
				case <-p.Done():
				case <-deadline:
					t.Fatalf("flow %d of %d still running after 60s; inside %d", i, n, hw.inside.Load())
				}
				_, err := p.Wait()
				var e *engine.Error
				switch {
				case err == nil:
					ok++
				case errorAs(err, &e) && e.Code == engine.Canceled && i%3 == 2:
					canceled++
				case errorAs(err, &e) && e.Code == engine.Timeout && i%3 == 1:
					timedOut++
				default:
					t.Errorf("flow %d: %v", i, err)
				}
			}
			t.Logf("%d flows: %d succeeded, %d canceled, %d timed out; at most %d inside", n, ok, canceled, timedOut, hw.max.Load())
			if !eventually(o.zero) {
				t.Errorf("stats at the end: %s, want zero", statsOf(o.obj))
			}
			if k := hw.inside.Load(); k != 0 {
				t.Errorf("%d sections not left", k)
			}
			for _, root := range roots {
				root.Release()
			}
		})
	}
}

func errorAs(err error, e **engine.Error) bool {
	x, ok := err.(*engine.Error)
	*e = x
	return ok
}

// TestSyncBreakContinueLeave: Break and Continue raised inside a section
// leave it (the Sync step's cancel handler runs), so the object is free
// again for the next iteration and empty after the loop.
func TestSyncBreakContinueLeave(t *testing.T) {
	r := reactor.NewManual()
	mu := NewMutex(1, 0)
	th := NewThrottle(r, 1<<20, time.Hour, 0)
	l := NewLimiter(r, LimiterOptions{Rate: 1 << 20, Period: time.Hour})
	for _, obj := range []engine.Sync{mu, th, l} {
		t.Run(fmt.Sprintf("%T", obj), func(t *testing.T) {
			i, entered := 0, 0
			root := engine.New(r)
			root.Loop(func(as *engine.Steps) {
				as.Sync(obj, func(as *engine.Steps) {
					entered++
					i++
					switch {
					case i == 10:
						as.Break()
					case i%2 == 0:
						as.Continue()
					}
				}, nil)
			})
			p := root.Promise()
			r.RunUntilIdle()
			if _, err := p.Wait(); err != nil || entered != 10 {
				t.Fatalf("entered %d, err %v", entered, err)
			}
			switch o := obj.(type) {
			case *Mutex:
				if s := o.Stats(); s != (Stats{}) {
					t.Fatalf("stats %+v", s)
				}
			case *Limiter:
				if c, _ := o.Stats(); c != (Stats{}) {
					t.Fatalf("concurrency stats %+v", c)
				}
			}
		})
	}
}
