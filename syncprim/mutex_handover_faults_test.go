package syncprim

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A Mutex(1) handed between the flows of four parked-prone reactors (no
// spin, so hand-overs meet parked loops and take the hand-over turn):
// some sections panic (their flow gets InternalError, the Mutex goes on
// to the next waiter), some arm a timeout and wait for an External that
// a goroutine completes (a timer and a foreign completion left by the
// woken flow), and every section runs as its own reactor's loop
// (IsSameThread, IsLoopGoroutine), one at a time. Every flow ends, every
// entry is counted once, and the Mutex is free at the end. Locked loops,
// and unlocked ones (which yield to the scheduler before they sleep).
func TestMutexHandOverPanicsTimersExternals(t *testing.T) {
	for _, c := range []struct {
		name string
		opts reactor.Options
	}{
		{"locked", reactor.Options{CPU: -1, Spin: reactor.NoSpin}},
		{"unlocked", reactor.Options{CPU: -1, Spin: reactor.NoSpin, Unlocked: true}},
	} {
		t.Run(c.name, func(t *testing.T) { mutexHandOverFaults(t, c.opts) })
	}
}

func mutexHandOverFaults(t *testing.T, opts reactor.Options) {
	g, err := reactor.NewGroup(4, opts)
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer func() {
		if err := g.Close(); err != nil {
			t.Errorf("group close: %v", err)
		}
	}()
	const flows, per = 8, 300
	mu := NewMutex(1, 0)
	var entries, panics, caught, offLoop, twice atomic.Int64
	var inside atomic.Int32
	section := func(as *engine.Steps) {
		if inside.Add(1) != 1 {
			twice.Add(1)
		}
		r := as.Reactor()
		if !r.IsSameThread() || !r.IsLoopGoroutine() {
			offLoop.Add(1)
		}
		n := entries.Add(1)
		inside.Add(-1)
		switch {
		case n%7 == 0:
			panics.Add(1)
			panic("a section panics")
		case n%5 == 0:
			as.SetTimeout(time.Hour)
			ext := as.External()
			go func() { ext.Success() }()
		}
	}
	onErr := func(as *engine.Steps, code string) {
		if code == engine.InternalError {
			caught.Add(1)
			as.Success()
		}
	}
	ps := make([]*engine.Promise, flows)
	for i := range ps {
		root := engine.New(g.Next())
		root.Repeat(per, func(as *engine.Steps, _ int) {
			as.Add(func(as *engine.Steps) { as.Sync(mu, section, nil) }, onErr)
		})
		ps[i] = root.Promise()
	}
	for i, p := range ps {
		select {
		case <-p.Done():
		case <-time.After(reactortest.Hang):
			t.Fatalf("flow %d did not end after %d of %d entries (a lost hand-over or wake-up)", i, entries.Load(), flows*per)
		}
		if _, err := p.Wait(); err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
	}
	if n := entries.Load(); n != flows*per {
		t.Errorf("%d entries, want %d", n, flows*per)
	}
	if p, c := panics.Load(), caught.Load(); p != c || p == 0 {
		t.Errorf("%d sections panicked, %d InternalErrors caught; want equal, nonzero", p, c)
	}
	if n := twice.Load(); n != 0 {
		t.Errorf("%d entries found another flow inside a Mutex(1)", n)
	}
	if n := offLoop.Load(); n != 0 {
		t.Errorf("%d sections ran off their reactor's loop", n)
	}
	// The Mutex is free: a flow on each reactor enters at once.
	for _, r := range g.Reactors() {
		root := engine.New(r)
		root.Add(func(as *engine.Steps) { as.Sync(mu, func(*engine.Steps) {}, nil) })
		select {
		case <-root.Promise().Done():
		case <-time.After(reactortest.Hang):
			t.Fatal("the Mutex was left held")
		}
	}
}
