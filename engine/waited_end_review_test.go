package engine

import (
	"context"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// The waited end of a pooled root (endRunWaited's emptying of the kept
// flow, finishKeptExt's short end of a Promise's or a Batch's success)
// across the ends that reach it by other ways than advanceFast's last
// step, and the runs that follow it on the same root: the Promise's values
// exact, the next run's first step given none, the counters (by name too)
// counted once, argsClear true only where the flow was emptied, and the
// pooled root clean after Release.
func TestWaitedEndOtherPaths(t *testing.T) {
	SkipIfDebug(t) // released roots are never reused there: no pooled root keeps a flow
	type outcome struct {
		vals    []Value // the Promise's values on success
		code    string  // the Promise's error code, "" for a success
		emptied bool    // the end emptied the kept flow (argsClear)
	}
	wide := func(as *Steps) { as.Success(Int(-1), Int(-2), Int(-3), Int(-4)) }
	cases := []struct {
		name string
		// build adds the run's steps (and sets what the run needs) on
		// root; a step that parks sends its External on ext, and the
		// test completes it from its own goroutine.
		build func(root *Steps, ext chan<- External)
		ext   []Value // the External's values (nil: no External)
		want  outcome
	}{
		{"named, last step", func(root *Steps, _ chan<- External) {
			root.SetName("review-waited")
			root.Add(wide)
			root.Add(func(as *Steps) { as.Success(Int(5)) })
		}, nil, outcome{[]Value{Int(5)}, "", true}},
		{"OnEnd, last step", func(root *Steps, _ chan<- External) {
			xOnEnd(root, func(*Steps, string) {})
			root.Add(wide)
			root.Add(func(as *Steps) { as.Success(Int(6)) })
		}, nil, outcome{[]Value{Int(6)}, "", true}},
		{"External, one value", func(root *Steps, ext chan<- External) {
			root.Add(wide)
			root.Add(func(as *Steps) { ext <- as.External() })
		}, []Value{Int(7)}, outcome{[]Value{Int(7)}, "", true}},
		{"External, three values", func(root *Steps, ext chan<- External) {
			root.Add(func(as *Steps) { as.Success(Int(-1)) })
			root.Add(func(as *Steps) { ext <- as.External() })
		}, []Value{Int(7), Str("b"), Int(9)}, outcome{[]Value{Int(7), Str("b"), Int(9)}, "", true}},
		{"sub-steps last", func(root *Steps, _ chan<- External) {
			root.Add(wide)
			root.Add(func(as *Steps) {
				as.Add(func(as *Steps) { as.Success(Int(8), Int(9)) })
			})
		}, nil, outcome{[]Value{Int(8), Int(9)}, "", true}},
		{"parallel last", func(root *Steps, _ chan<- External) {
			root.Add(wide)
			p := root.Parallel()
			p.Add(func(as *Steps) { as.Success(Int(1)) })
			p.Add(func(as *Steps) { as.Success(Int(2)) })
		}, nil, outcome{nil, "", true}},
		{"error", func(root *Steps, _ chan<- External) {
			root.Add(wide)
			root.Add(func(as *Steps) { as.Error("Failed") })
		}, nil, outcome{nil, "Failed", false}},
		{"timeout", func(root *Steps, ext chan<- External) {
			root.Add(wide)
			root.Add(func(as *Steps) { as.SetTimeout(time.Millisecond); as.WaitExternal() })
		}, nil, outcome{nil, Timeout, false}},
		{"context", func(root *Steps, _ chan<- External) {
			root.SetContext(context.Background())
			root.Add(wide)
			root.Add(func(as *Steps) { as.Success(Int(4)) })
		}, nil, outcome{[]Value{Int(4)}, "", true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin})
			var warm [2 * rootQuarantine]*Steps
			for i := range warm {
				warm[i] = New(r)
				warm[i].Add(emptyStep)
				if _, err := warm[i].Promise().Wait(); err != nil {
					t.Fatal(err)
				}
			}
			for _, w := range warm {
				w.Release()
			}
			root := New(r)
			rt := rootOf(root)
			if !rt.keepFlow {
				t.Fatal("the root did not come from the pool")
			}
			m0, err := ReadMetrics(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			for run := range 3 {
				ext := make(chan External, 1)
				c.build(root, ext)
				p := root.Promise()
				if c.ext != nil {
					if !(<-ext).Success(c.ext...) {
						t.Fatalf("run %d: External.Success refused", run)
					}
				}
				a, err := p.Wait()
				if c.want.code != "" {
					if e, ok := err.(*Error); !ok || e.Code != c.want.code {
						t.Fatalf("run %d: Wait: %v, want %s", run, err, c.want.code)
					}
				} else if err != nil {
					t.Fatalf("run %d: Wait: %v", run, err)
				} else {
					if a.Len() != len(c.want.vals) {
						t.Fatalf("run %d: %d values %+v, want %v", run, a.Len(), a.v, c.want.vals)
					}
					for i, v := range c.want.vals {
						if a.At(i) != v {
							t.Fatalf("run %d: value %d %+v, want %+v", run, i, a.At(i), v)
						}
					}
				}
				// The run word was stored before the Promise ended
				// (endRunWaited), so the flags are the end's.
				if rt.argsClear != c.want.emptied {
					t.Fatalf("run %d: argsClear %v, want %v", run, rt.argsClear, c.want.emptied)
				}
				// The next run's first step gets no values.
				var first int
				root.Add(func(as *Steps) { first = as.Args().Len() })
				if _, err := root.Promise().Wait(); err != nil || first != 0 {
					t.Fatalf("run %d: the next run: %v, its first step got %d values", run, err, first)
				}
			}
			m1, err := ReadMetrics(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			ok, failed := uint64(6), uint64(0)
			if c.want.code != "" {
				ok, failed = 3, 3
			}
			if d := m1.FlowsSucceeded - m0.FlowsSucceeded; d != ok {
				t.Errorf("FlowsSucceeded +%d, want +%d", d, ok)
			}
			if d := m1.FlowsFailed - m0.FlowsFailed; d != failed {
				t.Errorf("FlowsFailed +%d, want +%d", d, failed)
			}
			if d := m1.FlowsStarted - m0.FlowsStarted; d != 6 {
				t.Errorf("FlowsStarted +%d, want +6", d)
			}
			for _, nm := range m1.ByName {
				if nm.Name == "review-waited" && (nm.Succeeded != 6 || nm.Running != 0) {
					t.Errorf("by name: %+v, want 6 succeeded, none running", nm)
				}
			}
			fl := rt.Steps.fl
			root.Release()
			if fl != nil && !fl.args.empty() {
				t.Fatalf("Release pooled the root with its flow's values: %+v", fl.args.v)
			}
		})
	}
}
