package engine

import (
	"context"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// The counters count what happened, by name too, read on the loop.
func TestMetricsCount(t *testing.T) {
	r := reactor.NewManual()
	run := func(name string, body ExecFunc) *Steps {
		root := New(r)
		root.SetName(name)
		root.Add(emptyStep).Add(body)
		root.Execute()
		return root
	}
	run("m-ok", emptyStep)
	run("m-ok", emptyStep)
	run("m-fail", func(as *Steps) { as.Error("Boom") })
	run("", func(as *Steps) { as.SetTimeout(time.Millisecond); as.WaitExternal() })
	c := run("m-cancel", func(as *Steps) { as.WaitExternal() })
	run("m-sleep", func(as *Steps) {
		ext := as.External()
		as.Reactor().Deferred(3*time.Millisecond, func() { ext.Success() })
	})
	r.RunUntilIdle()
	c.Cancel()
	r.RunUntilIdle()
	r.Advance(5 * time.Millisecond)
	m, err := ReadMetrics(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if m.FlowsStarted != 6 || m.FlowsSucceeded != 3 || m.FlowsFailed != 2 || m.FlowsTimedOut != 1 || m.FlowsCanceled != 1 || m.FlowsRunning != 0 {
		t.Errorf("flows %+v", m)
	}
	if m.StepsRun != 12 {
		t.Errorf("StepsRun %d, want 12", m.StepsRun)
	}
	got := map[string]NameMetrics{}
	for _, n := range m.ByName {
		got[n.Name] = n
	}
	want := map[string]NameMetrics{
		"m-ok":     {Name: "m-ok", Started: 2, Succeeded: 2},
		"m-fail":   {Name: "m-fail", Started: 1, Failed: 1},
		"m-cancel": {Name: "m-cancel", Started: 1, Canceled: 1},
		"m-sleep":  {Name: "m-sleep", Started: 1, Succeeded: 1, Time: 3 * time.Millisecond},
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("ByName[%s] = %+v, want %+v", k, got[k], w)
		}
	}
	if m.Reactor.TimersFired == 0 || m.Reactor.Iterations == 0 {
		t.Errorf("reactor %+v: no timer or iteration counted", m.Reactor)
	}
}

// Off the loop, the snapshot is taken on a real loop and the reactor's own
// counters move; a closed reactor gives ErrNoSnapshot.
func TestMetricsOffLoop(t *testing.T) {
	r, err := reactor.New(reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run() }()
	for i := 0; i < 3; i++ {
		root := New(r)
		root.Add(emptyStep)
		if _, err := root.Promise().Wait(); err != nil {
			t.Fatal(err)
		}
		root.Release()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := ReadMetrics(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if m.FlowsStarted != 3 || m.FlowsSucceeded != 3 || m.StepsRun != 3 {
		t.Errorf("flows %+v", m)
	}
	if m.Reactor.TasksRun < 3 || m.Reactor.Wakeups == 0 || m.Reactor.PollTime <= 0 || m.Reactor.RunTime <= 0 || m.Reactor.RingSize == 0 {
		t.Errorf("reactor %+v", m.Reactor)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := ReadMetrics(ctx, r); err != ErrNoSnapshot {
		t.Errorf("on a closed reactor: %v, want ErrNoSnapshot", err)
	}
}
