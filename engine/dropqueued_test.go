package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// X.DropQueued: a run waiting at its first level-0 step drops the steps
// behind it; the run then ends with that step, counted a success, and the
// dropped steps never run. A root whose run has not started keeps its
// steps; off the loop it panics.
func TestDropQueued(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	var ext engine.External
	var ran []string
	root.Add(func(as *engine.Steps) {
		ran = append(ran, "first")
		as.Add(func(as *engine.Steps) { ext = as.External() })
	})
	for _, name := range []string{"second", "third"} {
		root.Add(func(*engine.Steps) { ran = append(ran, name) })
	}
	if n := engine.X.DropQueued(root); n != 0 {
		t.Fatalf("a root being built: %d dropped, want 0", n)
	}
	p := root.Promise()
	r.RunUntilIdle() // the run waits in the first step's sub-step
	dropped := make(chan int, 1)
	r.Immediate(func() { dropped <- engine.X.DropQueued(root) })
	r.RunUntilIdle()
	if n := <-dropped; n != 2 {
		t.Fatalf("%d dropped, want 2", n)
	}
	ext.Success()
	r.RunUntilIdle()
	if _, err := p.Wait(); err != nil {
		t.Fatalf("the run ended with %v, want a success", err)
	}
	if got := strings.Join(ran, ","); got != "first" {
		t.Fatalf("ran %q, want only first", got)
	}
	m, err := engine.ReadMetrics(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if m.FlowsSucceeded != 1 || m.FlowsFailed != 0 {
		t.Fatalf("metrics %+v, want one success", m)
	}
	if st := engine.StatsOf(r); st.FramesLive != 0 {
		t.Fatalf("%d frames live after the run, want 0", st.FramesLive)
	}
	root.Release()

	// From the running step's own callback: the steps after it go.
	root = engine.New(r)
	ran = ran[:0]
	root.Add(func(as *engine.Steps) {
		ran = append(ran, "a")
		if n := engine.X.DropQueued(root); n != 1 {
			t.Errorf("from a's callback: %d dropped, want 1", n)
		}
	})
	root.Add(func(*engine.Steps) { ran = append(ran, "b") })
	p = root.Promise()
	r.RunUntilIdle()
	if _, err := p.Wait(); err != nil || strings.Join(ran, ",") != "a" {
		t.Fatalf("ran %q, ended %v; want a and a success", ran, err)
	}
	root.Release()

	// A step's accessor is not a root: InternalError for that flow only.
	root = engine.New(r)
	root.Add(func(as *engine.Steps) { engine.X.DropQueued(as) })
	p = root.Promise()
	r.RunUntilIdle()
	if _, err := p.Wait(); err == nil || err.(*engine.Error).Code != engine.InternalError {
		t.Fatalf("DropQueued on a step's accessor: %v, want InternalError", err)
	}
	root.Release()

	rr, err := reactor.New(reactor.Options{CPU: -1})
	if err != nil {
		t.Skipf("no real reactor: %v", err)
	}
	defer rr.Close()
	off := engine.New(rr)
	off.Add(func(*engine.Steps) {})
	off.Execute() // posted: rr's loop does not run, so the run stays executing
	defer func() {
		if v := recover(); v == nil || !strings.Contains(v.(string), "DropQueued") {
			t.Fatalf("off the loop: recovered %v, want a panic naming DropQueued", v)
		}
	}()
	engine.X.DropQueued(off)
}
