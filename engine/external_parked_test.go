//go:build linux

package engine_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// waitLoopParked waits until r's loop is parked (blocked in epoll_wait
// with nothing to do), so that an External finished next is applied under
// the borrowed word (reactor.X.TakeParked) rather than posted. The Polling
// fallback never parks (the test skips it).
func waitLoopParked(t *testing.T, r *reactor.Reactor) {
	t.Helper()
	deadline := time.Now().Add(reactortest.Hang)
	for !reactor.X.TakeParked(r) {
		if time.Now().After(deadline) {
			t.Fatal("the loop never parked")
		}
		runtime.Gosched()
	}
	reactor.X.GiveParked(r, false)
}

// An External finished from another goroutine while its reactor's loop is
// parked is applied there and then, under the loop's borrowed word, and
// the loop woken for the flow: values, errors and Pass reach the flow as
// when the loop applies them, the flow runs on, the External counts once,
// and a step resumed this way may arm a timeout of its own.
func TestExternalOnParkedLoop(t *testing.T) {
	if pollingFallback {
		t.Skip("the Polling fallback never parks")
	}
	r := reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin})
	cases := []struct {
		name   string
		finish func(engine.External) bool
		code   string
		want   int64
	}{
		{"success", func(x engine.External) bool { return x.Success(engine.Int(42)) }, "", 42},
		{"pass", engine.External.Pass, "", 7},
		{"error", func(x engine.External) bool { return x.Error("CommError", "parked") }, "CommError", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for round := 0; round < 20; round++ {
				exts := make(chan engine.External, 1)
				var handler string
				root := engine.New(r)
				root.Add(func(as *engine.Steps) { as.Success(engine.Int(7)) })
				root.Add(func(as *engine.Steps) { exts <- as.External() },
					func(as *engine.Steps, code string) { handler = code + ": " + as.State().ErrorInfo })
				root.Add(func(as *engine.Steps) {
					// Still the loop, with a timer of its own.
					as.SetTimeout(time.Hour)
					v := as.Arg(0).Int()
					as.Add(func(as *engine.Steps) { as.Success(engine.Int(v)) })
				})
				p := root.Promise()
				x := <-exts
				waitLoopParked(t, r)
				if !c.finish(x) {
					t.Fatalf("round %d: the External of a waiting step reported false", round)
				}
				if x.Pass() {
					t.Fatalf("round %d: a second completion reported true", round)
				}
				args, err := realWait(t, p, c.name)
				if c.code != "" {
					wantCode(t, err, c.code)
					if handler != c.code+": parked" {
						t.Fatalf("round %d: error handler saw %q", round, handler)
					}
				} else {
					wantNoErr(t, err)
					if got := args.At(0).Int(); got != c.want {
						t.Fatalf("round %d: flow ended with %d, want %d", round, got, c.want)
					}
				}
				root.Release()
			}
		})
	}
}
