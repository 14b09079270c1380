//go:build linux

package engine_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Batch.Execute from a goroutine outside the loops runs the turn of each
// parked reactor of its set itself (reactor.X.PostRun), as Execute does
// for one root. The flows' steps run as the loop wherever they run
// (IsSameThread, IsLoopGoroutine), Promise.Wait inside them is still
// refused, a timer armed from the caller's turn fires on the loop and ends
// its flow, every result comes back at its index, and some first steps
// did run on the caller (the loops park between sets).
func TestBatchExecuteRunsParkedLoopsOnTheCaller(t *testing.T) {
	g := startGroup(t, 2)
	var onCaller, offLoop, misuseMissed atomic.Int64
	// A flow that never ends on each reactor: a step's Wait for the one of
	// its own reactor must be refused (it would deadlock).
	pending := map[*reactor.Reactor]*engine.Promise{}
	for range 2 {
		r := g.Next()
		blocker := engine.New(r)
		blocker.Add(func(as *engine.Steps) { as.WaitExternal() })
		p := blocker.Promise()
		pending[r] = p
		defer func() { blocker.Cancel(); <-p.Done(); blocker.Release() }()
	}

	var b engine.Batch
	roots := make([]*engine.Steps, 32)
	me := goid.Current()
	for set := range 50 {
		for i := range roots {
			v := int64(set<<8 | i)
			roots[i] = engine.New(g.Next())
			roots[i].Add(func(as *engine.Steps) {
				if goid.Current() == me {
					onCaller.Add(1)
				}
				if !as.Reactor().IsSameThread() || !as.Reactor().IsLoopGoroutine() {
					offLoop.Add(1)
				}
				if i == 0 {
					func() {
						defer func() {
							if s, _ := recover().(string); !strings.Contains(s, waitPanic) {
								misuseMissed.Add(1)
							}
						}()
						_, _ = pending[as.Reactor()].Wait()
					}()
				}
				if i%8 == 1 {
					// A timer armed by whoever runs this step ends it.
					x := as.External()
					as.Reactor().Deferred(time.Millisecond, func() { x.Success(engine.Int(v)) })
					return
				}
				as.Success(engine.Int(v))
			}, nil)
			roots[i].Add(func(as *engine.Steps) {
				if !as.Reactor().IsSameThread() {
					offLoop.Add(1)
				}
				as.Success(engine.Int(as.Arg(0).Int() + 1))
			})
			b.Add(roots[i])
		}
		b.Execute()
		batchWait(t, &b, fmt.Sprintf("set %d", set))
		for i := range roots {
			want := int64(set<<8|i) + 1
			if args, err := b.Result(i); err != nil || args.At(0).Int() != want {
				t.Fatalf("set %d flow %d: %v %v, want %d", set, i, args, err, want)
			}
			roots[i].Release()
		}
	}
	if n := offLoop.Load(); n != 0 {
		t.Fatalf("%d steps did not run as the loop", n)
	}
	if n := misuseMissed.Load(); n != 0 {
		t.Fatalf("Promise.Wait inside a step was not refused %d times", n)
	}
	if onCaller.Load() == 0 && !pollingFallback {
		t.Fatal("no first step ran on its caller: Batch.Execute never ran a parked loop's turn")
	}
	t.Logf("%d of %d first steps ran on the caller", onCaller.Load(), 50*len(roots))
}

// Close racing goroutines whose Batch.Execute may be running the loops'
// turns: every set's Wait returns, each flow with its result or, when the
// reactor closed first, an error, and Close returns.
func TestBatchExecuteRacingClose(t *testing.T) {
	for round := range 8 {
		g := startGroup(t, 2)
		var wg sync.WaitGroup
		var ok, failed atomic.Int64
		started := make(chan struct{}, 4)
		stop := make(chan struct{})
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var b engine.Batch
				roots := make([]*engine.Steps, 16)
				for set := 0; ; set++ {
					select {
					case <-stop:
						return
					default:
					}
					for i := range roots {
						roots[i] = engine.New(g.Next())
						roots[i].Add(func(as *engine.Steps) {
							if (w+i+set)%3 == 0 {
								// Some flows are still waiting for a timer at Close.
								x := as.External()
								as.Reactor().Deferred(time.Millisecond, func() { x.Success(engine.Int(1)) })
								return
							}
							as.Success(engine.Int(1))
						})
						b.Add(roots[i])
					}
					b.Execute()
					done := make(chan struct{})
					go func() { defer close(done); b.Wait() }()
					select {
					case <-done:
					case <-time.After(reactortest.Hang):
						t.Error("a set never ended")
						return
					}
					for i := range roots {
						if args, err := b.Result(i); err == nil && args.At(0).Int() == 1 {
							ok.Add(1)
						} else if err != nil {
							failed.Add(1)
						} else {
							t.Errorf("flow %d: success without its value: %v", i, args)
						}
						roots[i].Release()
					}
					if set == round%3 {
						started <- struct{}{}
					}
				}
			}()
		}
		<-started // Close after some sets: the sets in flight race it
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		close(stop)
		wg.Wait()
		if ok.Load() == 0 {
			t.Errorf("round %d: no flow succeeded before Close", round)
		}
	}
}
