package engine_test

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// An error with an empty code is InternalError wherever it is raised, never
// a success: before, Steps.Error("") ended the flow as if nothing failed,
// while External.Error("") and the C ABI's handle_error gave InternalError.
func TestErrorEmptyCode(t *testing.T) {
	cases := []struct {
		name     string
		step     engine.ExecFunc
		onerror  engine.ErrorFunc
		wantInfo string
	}{
		{"step", func(as *engine.Steps) { as.Error("") }, nil, "Error: called with an empty code"},
		{"step with info", func(as *engine.Steps) { as.Error("", "disk full") }, nil, "disk full"},
		{"handler", func(as *engine.Steps) { as.Error("NotFound") },
			func(as *engine.Steps, code string) { as.Error("") }, "Error: called with an empty code"},
		{"waiting step, from outside", func(as *engine.Steps) {
			ext := as.External()
			as.Reactor().Immediate(func() { ext.Error("", "late") })
		}, nil, "late"},
	}
	for _, c := range cases {
		r := reactor.NewManual()
		root := engine.New(r)
		var got string
		root.Add(func(as *engine.Steps) { as.Add(c.step, c.onerror) }, func(as *engine.Steps, code string) { got = code })
		p := root.Promise()
		r.RunUntilIdle()
		_, err := p.Wait()
		if got != engine.InternalError || codeOf(err) != engine.InternalError {
			t.Errorf("%s: handler got %q, flow ended %v, want InternalError", c.name, got, err)
		}
		if info := root.State().ErrorInfo; info != c.wantInfo {
			t.Errorf("%s: ErrorInfo %q, want %q", c.name, info, c.wantInfo)
		}
		root.Release()
	}
}

// SetTimeout with d <= 0 is due at once, as its doc says: not "no limit".
func TestSetTimeoutNotPositiveIsDue(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		r := reactor.NewManual()
		root := engine.New(r)
		root.Add(func(as *engine.Steps) { as.SetTimeout(d) })
		p := root.Promise()
		r.RunUntilIdle()
		r.Advance(time.Millisecond) // one tick: the timer pass
		select {
		case <-p.Done():
		default:
			t.Fatalf("SetTimeout(%v): the step still waits after a tick", d)
		}
		if _, err := p.Wait(); codeOf(err) != engine.Timeout {
			t.Errorf("SetTimeout(%v): %v, want Timeout", d, err)
		}
		root.Release()
	}
}
