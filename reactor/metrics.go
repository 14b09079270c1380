package reactor

import "time"

// Metrics are a reactor's loop counters: what its loop did and where its
// time went. Counters only grow.
//
// They are plain fields of the loop, written by the loop alone and counted
// once per iteration or wait (never once per task or step), so they cost the
// hot path no atomic instruction. Read them on the loop (LoopMetrics); from
// another goroutine, take the snapshot on the loop, as engine.ReadMetrics
// does, rather than reading the fields racily.
type Metrics struct {
	Iterations    uint64        // loop iterations: posted tasks, due timers, ready flows
	TasksRun      uint64        // tasks posted from other goroutines: taken from the cross-goroutine ring (and its overflow), or run by a caller in the parked loop's turn (PostRun: engine's Execute); each once, never also in TimersFired
	TimersFired   uint64        // timer-wheel entries fired (Deferred, After) and local tasks taken (Immediate or Post made on the loop)
	Wakeups       uint64        // real loops: times the loop woke up after blocking in epoll_wait (gnet's Polling fallback: callbacks after an idle turn)
	RingHighWater int           // the most tasks one iteration took from the ring: its depth high-water mark, to within what arrived while it drained (at most 1024, the per-iteration batch)
	RingSize      int           // the ring's capacity, for RingHighWater
	PollTime      time.Duration // real loops: time spent in epoll_wait, blocked or not (the fallback: between callbacks)
	RunTime       time.Duration // real loops: time spent between waits: I/O callbacks, tasks, timers, flows
	Spins         uint64        // real loops: spins before sleeping (Options.Spin, or the adaptive spin)
	SpinsFound    uint64        // the spins that found posted work (the rest ended in sleep)
}

// loopCounters are the loop-owned fields behind Metrics.
//
// timers counts the wheel's entries; the local tasks taken are counted by
// the local queue's head itself, which grows by one per task taken and
// never goes back (Metrics.TimersFired is the sum): one increment of each
// on-loop Immediate or Post fewer (the Turn row).
type loopCounters struct {
	iterations, tasks, timers, wakeups uint64
	spins, spinsFound                  uint64
	ringHigh                           int
	pollNanos, runNanos                int64
	now                                int64 // CoarseNow
	nowStale                           bool  // now is from before a turn run in the parked loop's place (borrowedTurn)
}

// CoarseNow is the loop's coarse clock, in nanoseconds from an arbitrary
// origin (only differences mean anything): read from the monotonic clock
// once each time the loop wakes from epoll_wait, so reading it costs a load,
// and it lags the true time by at most the loop's current round (its I/O
// callbacks and turn); in a turn run in the parked loop's place (Assist,
// Execute from a goroutine, a hand-off) its first read of the turn reads
// the clock. A manual reactor's is its virtual clock. Loop only.
// For measuring things that last many rounds, such as a flow's life
// (engine's per-name flow time), without a clock read per flow.
func (r *Reactor) CoarseNow() int64 {
	if r.manual {
		return r.virtual.Load()
	}
	if r.m.nowStale {
		r.refreshNow()
	}
	return r.m.now
}

// LoopMetrics returns the reactor's counters. Loop only (or while no loop
// runs and none will).
func (r *Reactor) LoopMetrics() Metrics {
	c := &r.m
	return Metrics{
		Iterations:    c.iterations,
		TasksRun:      c.tasks,
		TimersFired:   c.timers + r.local.head,
		Wakeups:       c.wakeups,
		RingHighWater: c.ringHigh,
		RingSize:      r.inbox.Cap(),
		PollTime:      time.Duration(c.pollNanos),
		RunTime:       time.Duration(c.runNanos),
		Spins:         c.spins,
		SpinsFound:    c.spinsFound,
	}
}
