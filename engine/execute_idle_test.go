package engine_test

import (
	"context"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Execute from a goroutine on an idle manual reactor starts a plain root
// itself, under the loop's word (reactor.X.TakeIdle), instead of posting
// its start: nothing of the flow runs before the driver drives, roots and
// the driver's own posts keep their order, and a root whose start would
// run a user callback (OnEnd of a root with no steps) still waits for the
// drive.
func TestExecuteOnIdleManualReactor(t *testing.T) {
	r := reactor.NewManual()
	r.RunUntilIdle() // the test's goroutine drives: only the driver takes an idle reactor
	var order []string
	root := func(name string) *engine.Steps {
		s := engine.New(r)
		s.Add(func(as *engine.Steps) { order = append(order, name) })
		return s
	}
	a, b, c := root("a"), root("b"), root("c")
	empty := engine.New(r)
	ended := false
	engine.X.OnEnd(empty, func(*engine.Steps, string) { ended = true })

	a.Execute()
	r.Immediate(func() {
		order = append(order, "posted")
		c.Execute() // on the loop: behind a, ahead of b's start
	})
	b.Execute()
	empty.Execute()
	if len(order) != 0 || ended {
		t.Fatalf("ran before the drive: %v, OnEnd %v", order, ended)
	}
	r.RunUntilIdle()
	want := []string{"posted", "a", "c", "b"}
	if len(order) != len(want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order %v, want %v", order, want)
		}
	}
	if !ended {
		t.Fatal("the empty root's OnEnd never ran")
	}
	for _, s := range []*engine.Steps{a, b, c, empty} {
		s.Release()
	}
}

// A root whose start would run a user callback is posted even when the
// reactor is idle: its OnEnd (a root with no steps ends at its start)
// runs in the driver's drive, not inside Execute.
func TestExecuteOnIdleManualReactorLeavesCallbacksToTheDrive(t *testing.T) {
	r := reactor.NewManual()
	r.RunUntilIdle()
	empty := engine.New(r)
	ended := false
	engine.X.OnEnd(empty, func(*engine.Steps, string) { ended = true })
	empty.Execute()
	if ended {
		t.Fatal("OnEnd ran inside Execute, before the drive")
	}
	r.RunUntilIdle()
	if !ended {
		t.Fatal("OnEnd never ran")
	}
	empty.Release()
}

// The goroutine that drives a manual reactor reads the engine's counters
// between its drives as the loop (ReadMetrics, StatsOf: IsLoopGoroutine),
// without the loop's word. Execute from another goroutine must then not
// start a flow in the engine's loop-owned state itself (reactor.X.TakeIdle):
// only the driver may, and other goroutines post the start as before. Under
// -race a start made by the other goroutine is a data race with the
// driver's reads.
func TestExecuteFromOtherGoroutineLeavesTheDriversState(t *testing.T) {
	r := reactor.NewManual()
	defer r.Close()
	r.RunUntilIdle() // this goroutine is the driver from here on

	const flows = 200
	start, done := make(chan struct{}), make(chan struct{})
	roots := make([]*engine.Steps, flows)
	for i := range roots {
		roots[i] = engine.New(r)
		roots[i].Add(func(*engine.Steps) {})
	}
	go func() {
		defer close(done)
		<-start
		for _, s := range roots {
			s.Execute()
		}
	}()
	close(start)
	reads := 0
	for running := true; running; reads++ {
		select {
		case <-done:
			running = false
		default:
		}
		m, err := engine.ReadMetrics(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		if m.FlowsSucceeded != 0 {
			t.Fatalf("counters while nobody drove: %+v", m)
		}
		_ = engine.StatsOf(r)
	}
	r.RunUntilIdle()
	m, err := engine.ReadMetrics(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if m.FlowsStarted != flows || m.FlowsSucceeded != flows {
		t.Fatalf("after the drive: started %d, succeeded %d; want %d each (%d reads)", m.FlowsStarted, m.FlowsSucceeded, flows, reads)
	}
	for _, s := range roots {
		s.Release()
	}
}
