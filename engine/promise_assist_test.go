package engine_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Flows started from goroutines that wait for them with Promise.Wait, on a
// group whose loops park between calls: Wait may run a flow's turn itself
// (reactor.Assist). Whoever runs a step, it runs as the loop, Wait inside
// it is still refused, a timer it arms fires, and many goroutines calling
// at once each get their own flow's result.
func TestPromiseWaitAssistKeepsTheContract(t *testing.T) {
	g, err := reactor.NewGroup(2, reactor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer g.Close()
	var assisted, offLoop, misuseMissed atomic.Int64
	call := func(waiter uintptr, i int64, checkMisuse bool) {
		r := g.Next()
		var pending *engine.Promise
		if checkMisuse {
			other := engine.New(r)
			other.Add(func(as *engine.Steps) { as.WaitExternal() })
			pending = other.Promise()
			defer func() { other.Cancel(); <-pending.Done(); other.Release() }()
		}
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			if goid.Current() == waiter {
				assisted.Add(1)
			}
			if !as.Reactor().IsSameThread() || !as.Reactor().IsLoopGoroutine() {
				offLoop.Add(1)
			}
			if checkMisuse {
				func() {
					defer func() {
						if s, _ := recover().(string); !strings.Contains(s, waitPanic) {
							misuseMissed.Add(1)
						}
					}()
					_, _ = pending.Wait()
				}()
			}
			// A timer armed by whoever runs this step ends it.
			x := as.External()
			as.Reactor().Deferred(time.Millisecond, func() { x.Success(engine.Int(i)) })
		}, nil)
		root.Add(func(as *engine.Steps) {
			if !as.Reactor().IsSameThread() {
				offLoop.Add(1)
			}
			as.Success(engine.Int(as.Arg(0).Int() + 1))
		})
		args, err := root.Promise().Wait()
		if err != nil || args.At(0).Int() != i+1 {
			t.Errorf("call %d: %v %v", i, args, err)
		}
		root.Release()
	}
	// One caller at a time: the loops park between calls, and Wait finds
	// them parked.
	me := goid.Current()
	for i := range int64(200) {
		call(me, i, i%10 == 0)
	}
	// Many at once.
	var wg sync.WaitGroup
	for w := range int64(8) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			me := goid.Current()
			for i := range int64(100) {
				call(me, w*1000+i, i%25 == 0)
			}
		}()
	}
	wg.Wait()
	if n := offLoop.Load(); n != 0 {
		t.Fatalf("%d steps did not run as the loop", n)
	}
	if n := misuseMissed.Load(); n != 0 {
		t.Fatalf("Promise.Wait inside a step was not refused %d times", n)
	}
	if assisted.Load() == 0 && !pollingFallback {
		t.Fatal("no step ran on its waiting goroutine: Wait never assisted")
	}
	t.Logf("%d of %d first steps ran on their waiter", assisted.Load(), 200+800)
}
