package bench

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The sync primitives' scenarios: syncprim's Mutex and Throttle against the
// Go libraries that do the same job, one file per implementation, as zap's
// benchmarks do for loggers:
//
//   - syncprim.go:  ours (impl=asyncsteps): flows on a reactor.Group of two
//     real reactors;
//   - semaphore.go: golang.org/x/sync/semaphore (impl=semaphore);
//   - stdsync.go:   the standard library's sync.Mutex (impl=syncMutex), the
//     baseline of any Go lock;
//   - rate.go:      golang.org/x/time/rate (impl=rate).
//
// Every implementation runs SyncWorkers workers (flows for ours, goroutines
// for the peers) doing exactly the same work, syncWork, inside the
// primitive, until the section has been entered b.N times in all.

// Implementation names of the sync scenarios' peers, as they appear in
// sub-benchmark names (BenchmarkMutexContended/impl=semaphore).
const (
	ImplSemaphore = "semaphore"
	ImplSyncMutex = "syncMutex"
	ImplRate      = "rate"
	ImplChanSem   = "chanSem" // a channel of one slot used as a semaphore
)

// Sizes and limits shared by every implementation of the sync scenarios.
const (
	// SyncWorkers is how many workers contend for one primitive.
	SyncWorkers = 8
	// WaitRate and WaitPeriod are ThrottleWait's limit: WaitRate entries
	// per WaitPeriod (100,000 per second), which the workers exceed.
	WaitRate   = 1000
	WaitPeriod = 10 * time.Millisecond
)

// SyncScenario is a group of rows of the sync primitives' table: a
// contended job, our primitive doing it, and the peers doing the same.
type SyncScenario struct {
	Name string // BenchmarkName; sub-benchmarks are impl=asyncsteps and impl=<peer>
	Unit string // what b.N counts
	What string // one line: what one unit is

	Ours  func(b *testing.B) // impl=asyncsteps
	Peers []Peer

	// Targets for ours, as in Scenario.
	MaxNs      float64
	ZeroAllocs bool
}

// Peer is one peer of a sync scenario.
type Peer struct {
	Name  string // impl=Name
	Bench func(b *testing.B)
}

// Target describes the scenario's targets, as Scenario.Target.
func (s SyncScenario) Target() string {
	return Scenario{Unit: s.Unit, MaxNs: s.MaxNs, ZeroAllocs: s.ZeroAllocs}.Target()
}

// Met reports whether a result of ours meets the targets, as Scenario.Met.
func (s SyncScenario) Met(nsPerUnit float64, allocs uint64) bool {
	return Scenario{MaxNs: s.MaxNs, ZeroAllocs: s.ZeroAllocs}.Met(nsPerUnit, allocs)
}

// SyncScenarios is the sync primitives' table, in the order reports print it.
var SyncScenarios = []SyncScenario{
	{
		Name: "MutexContended", Unit: "op",
		What: "one entry into a section that 8 workers contend for, one at a time",
		Ours: MutexContended,
		Peers: []Peer{
			{ImplSemaphore, MutexContendedSemaphore},
			{ImplSyncMutex, MutexContendedSyncMutex},
			{ImplChanSem, MutexContendedChan},
		},
		MaxNs:      1000,
		ZeroAllocs: true,
	},
	{
		Name: "MutexContendedNoSpin", Unit: "op",
		What: "MutexContended on reactors that never spin (reactor.NoSpin): a wake-up per hand-over",
		Ours: MutexContendedNoSpin,
		Peers: []Peer{
			{ImplSemaphore, MutexContendedSemaphore},
			{ImplSyncMutex, MutexContendedSyncMutex},
		},
		ZeroAllocs: true,
	},
	{
		Name: "MutexContendedSpin", Unit: "op",
		What: "MutexContended on reactors that spin 10µs before they sleep: hand-overs without wake-ups",
		Ours: MutexContendedSpin,
		Peers: []Peer{
			{ImplSemaphore, MutexContendedSemaphore},
			{ImplSyncMutex, MutexContendedSyncMutex},
		},
		MaxNs:      1000,
		ZeroAllocs: true,
	},
	{
		Name: "ThrottlePass", Unit: "op",
		What: "one entry through a rate limit that 8 workers never reach",
		Ours: ThrottlePass,
		Peers: []Peer{
			{ImplRate, ThrottlePassRate},
		},
		ZeroAllocs: true,
	},
	{
		Name: "ThrottleWait", Unit: "op",
		What: "one entry through a limit of 100,000/s that 8 workers exceed: they wait",
		Ours: ThrottleWait,
		Peers: []Peer{
			{ImplRate, ThrottleWaitRate},
		},
		ZeroAllocs: true,
	},
}

// LookupSync returns the sync scenario called name.
func LookupSync(name string) (SyncScenario, bool) {
	for _, s := range SyncScenarios {
		if s.Name == name {
			return s, true
		}
	}
	return SyncScenario{}, false
}

// Metrics every sync benchmark reports beside ns/op, by b.ReportMetric.
const (
	// MetricFairness is the most entries a worker made over the fewest
	// (at least 1): 1 is perfectly fair.
	MetricFairness = "max/min-entries"
	// MetricOfLimit is, for a throttled scenario, the rate achieved over
	// the limit: at most about 1.
	MetricOfLimit = "of-limit"
)

// syncWork is the job of every sync scenario: workers enter the primitive's
// section until it has been entered target times in all. The section, enter,
// is the same code for every implementation: one bounded increment of a
// shared counter, and the worker's own count (for fairness); in an
// exclusive section also a check that nobody else is inside.
type syncWork struct {
	exclusive bool
	target    int64 // set between rounds, while no worker runs
	total     atomic.Int64
	inside    atomic.Int32
	overlap   atomic.Bool
	per       [SyncWorkers]struct {
		n int64 // written only by its own worker
		_ [56]byte
	}
}

// reset starts a round of n entries.
func (w *syncWork) reset(n int) {
	w.target = int64(n)
	w.total.Store(0)
	for i := range w.per {
		w.per[i].n = 0
	}
}

// more reports whether the round wants more entries.
func (w *syncWork) more() bool { return w.total.Load() < w.target }

// enter is the section, run by worker i inside the primitive.
func (w *syncWork) enter(i int) {
	if w.exclusive && w.inside.Add(1) != 1 {
		w.overlap.Store(true)
	}
	for {
		n := w.total.Load()
		if n >= w.target {
			break
		}
		if w.total.CompareAndSwap(n, n+1) {
			w.per[i].n++
			break
		}
	}
	if w.exclusive {
		w.inside.Add(-1)
	}
}

// check reports what went wrong in a round: entries lost or in excess, two
// workers inside an exclusive section.
func (w *syncWork) check(name string) error {
	if got := w.total.Load(); got != w.target {
		return fmt.Errorf("%s: %d entries, want %d", name, got, w.target)
	}
	if w.overlap.Load() {
		return fmt.Errorf("%s: two workers were inside the section at once", name)
	}
	return nil
}

// fairness is the most entries a worker made over the fewest (at least 1).
func (w *syncWork) fairness() float64 {
	lo, hi := w.per[0].n, w.per[0].n
	for i := range w.per {
		lo, hi = min(lo, w.per[i].n), max(hi, w.per[i].n)
	}
	return float64(hi) / float64(max(lo, 1))
}

// checkRate reports an error if the round's entries exceeded a limit of
// rate entries per period over elapsed, allowing one burst of rate entries
// and one more period for the clock's tick; it returns the rate achieved
// over the limit.
func (w *syncWork) checkRate(name string, rate int, period, elapsed time.Duration) (float64, error) {
	n := w.total.Load()
	if limit := int64(rate) * (int64(elapsed/period) + 2); n > limit {
		return 0, fmt.Errorf("%s: %d entries in %v: more than %d per %v", name, n, elapsed, rate, period)
	}
	return float64(n) / elapsed.Seconds() / (float64(rate) / period.Seconds()), nil
}

// finish stops b's timer, checks the round and reports the metrics; with
// rate > 0 it also reports the rate, and with strict fails b if the rate
// exceeded the limit. Only ours is strict: rate.Limiter may exceed its
// limit a little under concurrent Wait calls (each takes time.Now() before
// its lock, and a stale time moves the bucket's clock back:
// golang/go#56287), which the table reports (of-limit above 1) rather than
// fails.
func (w *syncWork) finish(b *testing.B, name string, rate int, period time.Duration, strict bool) {
	b.StopTimer()
	if err := w.check(name); err != nil {
		fatalf(b, "%v", err)
	}
	b.ReportMetric(w.fairness(), MetricFairness)
	if rate > 0 {
		of, err := w.checkRate(name, rate, period, b.Elapsed())
		if err != nil && strict {
			fatalf(b, "%v", err)
		}
		if err != nil {
			of = float64(w.total.Load()) / b.Elapsed().Seconds() / (float64(rate) / period.Seconds())
		}
		b.ReportMetric(of, MetricOfLimit)
	}
}

// syncWarm is how many entries a sync benchmark makes before b.ResetTimer.
const syncWarm = 10000

// settle ends a sync benchmark's warm-up: a garbage collection now, so that
// none starts during the measured part, then a few short rounds. A
// collection empties the runtime's caches of the records a parked goroutine
// needs (sudogs): without the short rounds, the first wait of the
// benchmark goroutine (or a worker) on each P after a collection allocates
// one, which is the runtime's cost, not the primitive's.
func settle(round func(n int)) {
	runtime.GC()
	for range 4 {
		round(SyncWorkers)
	}
}

// workers is the peers' side of a sync scenario: SyncWorkers goroutines,
// started once, each running rounds of `for w.more() { step(i) }` where
// step enters the primitive, calls w.enter(i) inside, and leaves. A round
// starts with a token per worker on go and ends when all are done: no
// allocation per round.
type workers struct {
	w    *syncWork
	go_  chan struct{}
	done sync.WaitGroup
}

func startWorkers(w *syncWork, step func(i int)) *workers {
	ws := &workers{w: w, go_: make(chan struct{}, SyncWorkers)}
	for i := range SyncWorkers {
		go func() {
			for range ws.go_ {
				for w.more() {
					step(i)
				}
				ws.done.Done()
			}
		}()
	}
	return ws
}

// round runs the workers until the section has been entered n times.
func (ws *workers) round(n int) {
	ws.w.reset(n)
	ws.done.Add(SyncWorkers)
	for range SyncWorkers {
		ws.go_ <- struct{}{}
	}
	ws.done.Wait()
}

// stop ends the workers' goroutines.
func (ws *workers) stop() { close(ws.go_) }

// runWorkers is a peer's whole benchmark: warm up, b.N entries by
// SyncWorkers goroutines, checks and metrics (rate > 0: a throttled
// scenario, see syncWork.finish).
func runWorkers(b *testing.B, name string, exclusive bool, rate int, period time.Duration, step func(w *syncWork, i int)) {
	w := &syncWork{exclusive: exclusive}
	ws := startWorkers(w, func(i int) { step(w, i) })
	defer ws.stop()
	ws.round(syncWarm)
	settle(ws.round)
	b.ReportAllocs()
	b.ResetTimer()
	ws.round(b.N)
	w.finish(b, name, rate, period, false)
}
