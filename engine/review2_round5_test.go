package engine_test

import (
	"context"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

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
