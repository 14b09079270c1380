package engine

import (
	"context"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A root run again without Release, named (stepsd's pooled requests),
// starts and ends on the short paths from its second run on (keepFlow,
// startNamedKept, namedSucceeded): its name's counts and time, its
// failures, a renamed run, a run with an OnEnd and one canceled must count
// as on the full paths, and its steps must see their own arguments. Built
// and executed off the loop (the start a task) and on it (a server's: the
// start in Execute, startKeptExt, the end in advanceFast, finishKeptExt).
func TestMetricsReusedNamedRoot(t *testing.T) {
	t.Run("off-loop", func(t *testing.T) { testMetricsReusedNamedRoot(t, false) })
	t.Run("on-loop", func(t *testing.T) { testMetricsReusedNamedRoot(t, true) })
}

func testMetricsReusedNamedRoot(t *testing.T, onLoop bool) {
	r := reactor.NewManual()
	root := New(r)
	var ended []string
	runOnce := func(name string, body ExecFunc) {
		t.Helper()
		build := func() {
			root.SetName(name)
			root.Add(func(as *Steps) { as.Success(Int(int64(len(ended)))) }).Add(body)
			root.Execute()
		}
		if onLoop {
			r.Immediate(func() {
				build()
				RunReady(r)
			})
		} else {
			build()
		}
		r.RunUntilIdle()
	}
	check := func() {
		t.Helper()
		if root.Executing() {
			t.Fatal("the run has not ended")
		}
	}
	okStep := func(as *Steps) {
		if as.Args().Len() != 1 {
			t.Errorf("step got %d args, want 1", as.Args().Len())
		}
		ended = append(ended, "ok")
	}
	runOnce("r-ok", okStep)
	check()
	runOnce("r-ok", okStep)
	check()
	runOnce("r-ok", func(as *Steps) {
		ext := as.External()
		as.Reactor().Deferred(3*time.Millisecond, func() { ended = append(ended, "slept"); ext.Success() })
	})
	r.Advance(5 * time.Millisecond)
	r.RunUntilIdle()
	check()
	runOnce("r-ok", func(as *Steps) { as.Error("Boom") })
	check()
	runOnce("r-other", okStep)
	check()
	xOnEnd(root, func(_ *Steps, code string) { ended = append(ended, "onend:"+code) })
	runOnce("r-ok", okStep)
	check()
	xOnEnd(root, nil)
	runOnce("r-cancel", func(as *Steps) { as.WaitExternal() })
	root.Cancel()
	r.RunUntilIdle()
	check()
	runOnce("r-ok", okStep)
	check()

	m, err := ReadMetrics(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if m.FlowsStarted != 8 || m.FlowsSucceeded != 6 || m.FlowsFailed != 1 || m.FlowsCanceled != 1 || m.FlowsRunning != 0 {
		t.Errorf("flows %+v", m)
	}
	got := map[string]NameMetrics{}
	for _, n := range m.ByName {
		got[n.Name] = n
	}
	want := map[string]NameMetrics{
		"r-ok":     {Name: "r-ok", Started: 6, Succeeded: 5, Failed: 1, Time: 3 * time.Millisecond},
		"r-other":  {Name: "r-other", Started: 1, Succeeded: 1},
		"r-cancel": {Name: "r-cancel", Started: 1, Canceled: 1},
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("ByName[%s] = %+v, want %+v", k, got[k], w)
		}
	}
	wantEnded := []string{"ok", "ok", "slept", "ok", "ok", "onend:", "ok"}
	if len(ended) != len(wantEnded) {
		t.Fatalf("ended %v, want %v", ended, wantEnded)
	}
	for i := range ended {
		if ended[i] != wantEnded[i] {
			t.Fatalf("ended %v, want %v", ended, wantEnded)
		}
	}
}
