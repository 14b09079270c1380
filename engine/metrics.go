package engine

import (
	"context"
	"errors"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// Metrics is a snapshot of one reactor's engine counters, and of the
// reactor's own, taken on its loop (ReadMetrics). Counters only grow.
//
// Why no atomics: the counters are plain fields of the loop, incremented by
// the loop alone (steps are counted once per flow turn, from the turn's
// budget, not once per step). A reader never touches them: ReadMetrics posts
// a task that copies them on the loop, and the copy travels back through a
// channel, so every access is ordered by the ring and the channel and the
// race detector has nothing to report. The alternatives cost the hot path:
// atomic stores are locked instructions on amd64 (XCHG), and plain stores
// read with atomic loads (or a seqlock's plain copy) are data races to the
// race detector. The price is paid by the reader instead: a snapshot waits
// for the loop's next turn.
type Metrics struct {
	StepsRun       uint64 // step callbacks and built-in steps (loops, parallel, success steps) run
	FlowsStarted   uint64 // root flows started (Execute)
	FlowsSucceeded uint64
	FlowsFailed    uint64 // ended with an error code, Timeout included
	FlowsCanceled  uint64 // canceled: Cancel, Release, a context, reactor close
	FlowsTimedOut  uint64 // of FlowsFailed: ended with Timeout
	FlowsRunning   int    // root flows between start and end now
	Stats          Stats  // occupancy (StatsOf)

	// ByName has the counters of named flows (SetName), one entry per name
	// this reactor has started a flow of.
	ByName []NameMetrics

	Reactor reactor.Metrics // the loop's own counters
}

// NameMetrics are the counters of the flows of one name on one reactor.
type NameMetrics struct {
	Name                                          string
	Started, Succeeded, Failed, Canceled, Running uint64
	// Time is the summed life of the flows that ended, from start to end
	// on the reactor's coarse clock (reactor.CoarseNow: exact to within
	// one loop round). Time / (Succeeded+Failed+Canceled) is their mean
	// latency, with no clock read per flow.
	Time time.Duration
}

// counters are the loop-owned counters behind Metrics.
type counters struct {
	steps                                uint64
	started, succeeded, failed, canceled uint64
	timedOut                             uint64
	byName                               []nameCounters // by Name.idx
}

type nameCounters struct {
	name                                 *Name
	started, succeeded, failed, canceled uint64
	nanos                                int64 // the life of the flows that ended, summed
}

// namedStarted counts a named root flow that starts (prepareStart counts
// every flow). Loop only.
func (e *engine) namedStarted(rt *root, x *rootExt) {
	e.m.named(x.name).started++
	x.startAt = e.r.CoarseNow()
}

// flowEnded counts a root flow that ends with code ("": success). Loop
// only. The common case, an unnamed success, is inlined into finishRoot.
func (e *engine) flowEnded(rt *root, code string) {
	if len(code) == 0 && rt.more.Load() == nil {
		e.m.succeeded++
		return
	}
	e.flowEndedSlow(rt, code)
}

// namedSucceeded counts the success of a named flow for finishRoot's
// short end of a pooled root (flowEndedSlow's success, less its tests).
// Not inlined: the counters' table may grow (an append), which
// finishRoot must not hold (escape_test.go). Loop only.
//
//go:noinline
func (e *engine) namedSucceeded(x *rootExt) {
	nc := &e.m.byName[x.name.idx] // the run's start made it (namedStarted); a running root's name cannot change
	nc.succeeded++
	nc.nanos += e.r.CoarseNow() - x.startAt
}

func (e *engine) flowEndedSlow(rt *root, code string) {
	c := &e.m
	var nc *nameCounters
	if x := rt.more.Load(); x != nil && x.name != nil {
		nc = c.named(x.name)
		nc.nanos += e.r.CoarseNow() - x.startAt
	}
	switch code {
	case "":
		c.succeeded++
		if nc != nil {
			nc.succeeded++
		}
	case Canceled:
		c.canceled++
		if nc != nil {
			nc.canceled++
		}
	default:
		c.failed++
		if code == Timeout {
			c.timedOut++
		}
		if nc != nil {
			nc.failed++
		}
	}
}

// named returns n's counters, growing the table the first time this
// reactor sees n.
func (c *counters) named(n *Name) *nameCounters {
	if n.idx >= len(c.byName) {
		c.byName = append(c.byName, make([]nameCounters, n.idx+1-len(c.byName))...)
	}
	nc := &c.byName[n.idx]
	nc.name = n
	return nc
}

func (e *engine) snapshot() Metrics {
	c := &e.m
	m := Metrics{
		StepsRun:       c.steps,
		FlowsStarted:   c.started,
		FlowsSucceeded: c.succeeded,
		FlowsFailed:    c.failed,
		FlowsCanceled:  c.canceled,
		FlowsTimedOut:  c.timedOut,
		FlowsRunning:   int(c.started - c.succeeded - c.failed - c.canceled),
		Stats:          e.stats,
		Reactor:        e.r.LoopMetrics(),
	}
	for i := range c.byName {
		nc := &c.byName[i]
		if nc.name == nil {
			continue
		}
		m.ByName = append(m.ByName, NameMetrics{
			Name:      nc.name.name,
			Started:   nc.started,
			Succeeded: nc.succeeded,
			Failed:    nc.failed,
			Canceled:  nc.canceled,
			Running:   nc.started - nc.succeeded - nc.failed - nc.canceled,
			Time:      time.Duration(nc.nanos),
		})
	}
	return m
}

// ErrNoSnapshot is what ReadMetrics returns for a reactor whose loop does
// not run any more (closed), or whose loop did not take the snapshot before
// ctx was done (a loop stuck in a long callback, a manual reactor nobody
// drives).
var ErrNoSnapshot = errors.New("engine: metrics snapshot not taken: the reactor's loop did not run it")

type metricsRequest struct {
	e    *engine
	m    Metrics
	done chan struct{}
}

// ReadMetrics returns a snapshot of r's counters. Safe from any goroutine:
// off the loop it posts a task that takes the snapshot on the loop and waits
// for it, at most until ctx is done (then ErrNoSnapshot, or ctx.Err()). It
// allocates; it is for monitoring, not for the hot path.
func ReadMetrics(ctx context.Context, r *reactor.Reactor) (Metrics, error) {
	e := engineOf(r)
	if r.IsLoopGoroutine() {
		m := e.snapshot()
		m.Stats = StatsOf(r)
		return m, nil
	}
	req := &metricsRequest{e: e, done: make(chan struct{})}
	if !reactor.X.Post(r, takeSnapshot, unsafe.Pointer(req), 0) {
		return Metrics{}, ErrNoSnapshot
	}
	select {
	case <-req.done:
		m := req.m
		e.rootMu.Lock()
		m.Stats.RootsLive += e.rootsLive
		e.rootMu.Unlock()
		return m, nil
	case <-ctx.Done():
		return Metrics{}, errors.Join(ErrNoSnapshot, ctx.Err())
	}
}

func takeSnapshot(arg unsafe.Pointer, _ uint64) {
	req := (*metricsRequest)(arg)
	req.m = req.e.snapshot()
	close(req.done)
}
