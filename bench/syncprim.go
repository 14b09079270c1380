package bench

import (
	"sync"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// This file is our implementation of the sync scenarios (impl=asyncsteps):
// SyncWorkers flows spread over a reactor.Group of CPUs real reactors (one
// loop thread each, pinned one per CPU unless Pin is off), each flow a loop of
// as.Sync(obj, section) until the round is done. Unlike the engine
// scenarios (asyncsteps.go) this runs real loops: a primitive shared by
// flows of several threads is the point, and a waiter is resumed on its own
// reactor, which may have to be woken up. The peers' goroutines get the
// same CPUs (GOMAXPROCS).

// syncFlows is the fixture: the group, the flows' roots (reused from round
// to round) and the steps they run.
type syncFlows struct {
	g     *reactor.Group
	w     *syncWork
	roots [SyncWorkers]*engine.Steps
	gate  [SyncWorkers]engine.ExecFunc // flow i's first step: waits for the round's start
	start [SyncWorkers]engine.ExecFunc // flow i's second step: adds its loop
	done  engine.ExecFunc              // every flow's last step
	ended func()                       // done's callback: the flow has ended
	wg    sync.WaitGroup

	// The start gate: every flow waits on its External (ext) until all of
	// them wait (atGate), then round lets them all go. Without it the first
	// flow executed could run alone, uncontended, in its caller's turn (a
	// goroutine that executes on a parked loop runs the loop's turn
	// itself) while the next flows were not yet started: cheap entries
	// that are not contention, and one flow far ahead of the others.
	ext    [SyncWorkers]engine.External
	atGate sync.WaitGroup
}

// newSyncFlows starts a group of CPUs reactors (StartGroup) and builds the flows around
// the object mk returns; owner is the reactor a Throttle's timer runs on.
func newSyncFlows(w *syncWork, spin time.Duration, mk func(owner *reactor.Reactor) engine.Sync) (*syncFlows, error) {
	g, err := StartGroupSpin(spin)
	if err != nil {
		return nil, err
	}
	obj := mk(g.Reactors()[0])
	f := &syncFlows{g: g, w: w}
	// The last step cannot report the end itself: the flow ends after it
	// returns, and a root may be built again only once its flow has ended.
	// A loop callback posted from it runs after the flow's turn, when the
	// flow has ended (a Promise would allocate per run).
	f.ended = func() { f.wg.Done() }
	f.done = func(as *engine.Steps) { as.Reactor().Immediate(f.ended) }
	for i := range SyncWorkers {
		section := func(*engine.Steps) { w.enter(i) }
		body := func(as *engine.Steps) {
			if !w.more() {
				as.Break()
			}
			as.Sync(obj, section, nil)
		}
		// The loop is added on the loop by the flow's first step: a Loop
		// built off the loop keeps its state on the heap, one allocation
		// per round.
		f.start[i] = func(as *engine.Steps) { as.Loop(body) }
		f.gate[i] = func(as *engine.Steps) {
			f.ext[i] = as.External()
			f.atGate.Done()
		}
		f.roots[i] = engine.New(g.Next())
	}
	return f, nil
}

// round runs every flow until the section has been entered n times in all.
func (f *syncFlows) round(n int) {
	f.w.reset(n)
	f.wg.Add(SyncWorkers)
	f.atGate.Add(SyncWorkers)
	for i, root := range f.roots {
		root.Add(f.gate[i])
		root.Add(f.start[i])
		root.Add(f.done)
		root.Execute()
	}
	f.atGate.Wait()
	for i := range f.ext {
		f.ext[i].Pass()
	}
	f.wg.Wait()
}

// close releases the roots and closes the group.
func (f *syncFlows) close() error {
	for _, root := range f.roots {
		root.Release()
	}
	return f.g.Close()
}

// runSyncFlows is our whole benchmark for a sync scenario: warm up, b.N
// entries, checks and metrics (rate > 0: a throttled scenario).
func runSyncFlows(b *testing.B, name string, exclusive bool, rate int, period time.Duration, mk func(owner *reactor.Reactor) engine.Sync) {
	runSyncFlowsSpin(b, name, 0, exclusive, rate, period, mk)
}

// runSyncFlowsSpin is runSyncFlows on reactors with Options.Spin = spin.
func runSyncFlowsSpin(b *testing.B, name string, spin time.Duration, exclusive bool, rate int, period time.Duration, mk func(owner *reactor.Reactor) engine.Sync) {
	w := &syncWork{exclusive: exclusive}
	f, err := newSyncFlows(w, spin, mk)
	if err != nil {
		fatalf(b, "%s: %v", name, err)
	}
	f.round(syncWarm)
	settle(f.round)
	b.ReportAllocs()
	b.ResetTimer()
	f.round(b.N)
	w.finish(b, name, rate, period, true)
	if err := f.close(); err != nil {
		fatalf(b, "%s: closing the reactors: %v", name, err)
	}
}

// MutexContended: SyncWorkers flows on two reactors take turns in one
// syncprim.NewMutex(1, 0). A flow that finds it taken queues (FIFO) and is
// resumed on its own reactor when its turn comes. b.N counts entries.
// Default reactor options: the adaptive spin keeps a waiter's loop awake
// through the hand-overs.
func MutexContended(b *testing.B) { mutexContended(b, "MutexContended", 0) }

// MutexContendedNoSpin is MutexContended on reactors with
// reactor.NoSpin: a waiter's loop is asleep when its turn is posted, so
// every hand-over to the other reactor pays the eventfd write and the
// thread wake-up the default's adaptive spin saves (profiles/notes/README.md,
// "Adaptive spin").
func MutexContendedNoSpin(b *testing.B) {
	mutexContended(b, "MutexContendedNoSpin", reactor.NoSpin)
}

// HandoverSpin is the reactor.Options.Spin of MutexContendedSpin: long
// enough to cover a hand-over's round trip to the other reactor and back
// (about 1 µs with both loops awake), short enough that a loop whose
// partner went quiet sleeps soon after.
const HandoverSpin = 10 * time.Microsecond

// MutexContendedSpin is MutexContended on reactors that spin HandoverSpin
// before they sleep: a waiter's reactor is then awake when its turn is
// posted, and no hand-over pays for an eventfd write and a thread wake-up,
// for CPUs kept busy meanwhile (profiles/notes/README.md, "Cross-reactor hops").
func MutexContendedSpin(b *testing.B) { mutexContended(b, "MutexContendedSpin", HandoverSpin) }

// mutexContended is the MutexContended rows on reactors with Options.Spin
// = spin; the Mutex must be idle afterwards.
func mutexContended(b *testing.B, name string, spin time.Duration) {
	var m *syncprim.Mutex
	runSyncFlowsSpin(b, name, spin, true, 0, 0, func(*reactor.Reactor) engine.Sync {
		m = syncprim.NewMutex(1, 0)
		return m
	})
	if s := m.Stats(); s != (syncprim.Stats{}) {
		fatalf(b, "%s: %+v after the run, want zero", name, s)
	}
}

// ThrottlePass: SyncWorkers flows on two reactors enter one Throttle whose
// limit (2^30 an hour) they never reach: the cost of admission, one CAS on
// the Throttle's state word shared by both reactors. b.N counts entries.
func ThrottlePass(b *testing.B) {
	runSyncFlows(b, "ThrottlePass", false, 0, 0, func(owner *reactor.Reactor) engine.Sync {
		return syncprim.NewThrottle(owner, 1<<30, time.Hour, 0)
	})
}

// ThrottleWait: SyncWorkers flows on two reactors enter one Throttle of
// WaitRate entries per WaitPeriod, which they exceed: once a period's
// entries are spent they queue, and the Throttle's timer lets them in at
// the next period. The period is measured by the owner reactor's timer
// wheel (1ms ticks, a timer fires at most one tick late), so a period lasts
// WaitPeriod plus up to a tick. b.N counts entries.
func ThrottleWait(b *testing.B) {
	runSyncFlows(b, "ThrottleWait", false, WaitRate, WaitPeriod, func(owner *reactor.Reactor) engine.Sync {
		return syncprim.NewThrottle(owner, WaitRate, WaitPeriod, 0)
	})
}
