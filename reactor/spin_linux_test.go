//go:build linux

package reactor_test

import (
	"testing"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// pingPong is a message that two reactors pass back and forth.
type pingPong struct {
	a, b *reactor.Reactor
	left int
	done chan struct{}
}

func pingPongHop(p *pingPong, aux uint64) {
	if p.left--; p.left == 0 {
		close(p.done)
		return
	}
	to := p.a
	if aux == 0 {
		to = p.b
	}
	reactor.PostTo(to, pingPongHop, p, 1-aux)
}

// metricsOf reads r's metrics on its loop.
func metricsOf(t *testing.T, r *reactor.Reactor) reactor.Metrics {
	var m reactor.Metrics
	done := make(chan struct{})
	r.Immediate(func() { m = r.LoopMetrics(); close(done) })
	reactortest.Wait(t, done, "metrics")
	return m
}

// Two spinning reactors passing a message back and forth take each hop
// while spinning, inside a turn: neither goes to sleep, so none of the
// hops costs a wake-up, and every hop arrives. Spin is long (a second) so
// that only a thread descheduled for that long could make a loop sleep.
func TestSpinningLoopsHopWithoutWakeups(t *testing.T) {
	opts := reactor.Options{CPU: -1, Spin: time.Second}
	a, errA := reactortest.StartRun(t, opts)
	b, errB := reactortest.StartRun(t, opts)
	const hops = 2000
	// Warm up: both loops have run a posted task, so each is spinning
	// (or about to) when the measured hops start.
	warm := &pingPong{a: a, b: b, left: 4, done: make(chan struct{})}
	reactor.PostTo(a, pingPongHop, warm, 0)
	reactortest.Wait(t, warm.done, "warm-up hops")
	w0 := metricsOf(t, a).Wakeups + metricsOf(t, b).Wakeups
	p := &pingPong{a: a, b: b, left: hops, done: make(chan struct{})}
	reactor.PostTo(a, pingPongHop, p, 0)
	reactortest.Wait(t, p.done, "hops")
	w1 := metricsOf(t, a).Wakeups + metricsOf(t, b).Wakeups
	// The metrics reads themselves may find a loop asleep: a few wake-ups,
	// never one per hop.
	if d := w1 - w0; d > hops/10 {
		t.Errorf("%d wake-ups for %d hops between spinning loops", d, hops)
	}
	reactortest.CloseAndWait(t, a, errA)
	reactortest.CloseAndWait(t, b, errB)
}

// A spinning loop still fires its timers on time: the spin ends at the
// wheel's next deadline instead of running its whole length.
func TestSpinDoesNotDelayTimers(t *testing.T) {
	r, runErr := reactortest.StartRun(t, reactor.Options{CPU: -1, Spin: time.Hour})
	fired := make(chan struct{})
	// Posted from here, so the loop ran a posted task and then spins.
	reactor.PostTo(r, func(*pingPong, uint64) {
		r.After(time.Millisecond, func(unsafe.Pointer, uint64) { close(fired) }, nil, 0)
	}, &pingPong{}, 0)
	reactortest.Wait(t, fired, "a timer on a loop spinning for an hour")
	// And Close does not wait for the spin to end either.
	reactortest.CloseAndWait(t, r, runErr)
}
