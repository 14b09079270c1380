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

// callsAsTheLoop is the body of the tests of flows started from ordinary
// goroutines on a group whose loops park between calls (Execute's direct
// turn, execute_caller_test.go; Promise.Wait's assist,
// promise_assist_test.go). Each call builds a root on g.Next() whose first
// step notes whether it ran on the calling goroutine, checks that it runs
// as the loop and (every few calls) that Promise.Wait inside it is still
// refused, and arms a timer that completes it with the call's number i;
// its second step checks again that it runs as the loop and ends the flow
// with i+1. With viaPromise the caller waits with Promise.Wait and the
// last step succeeds with i+1; without, the caller executes the root and
// waits on a channel the last step writes i+1 to, never on a Promise.
// 200 calls run one at a time (the loops park between them), then 8
// goroutines make 100 each at once; every caller must get its own flow's
// result. It returns how many first steps ran on their caller: of the 200
// sequential calls, and of all 1000.
func callsAsTheLoop(t *testing.T, viaPromise bool) (sequential, all int64) {
	t.Helper()
	g, err := reactor.NewGroup(2, reactor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer g.Close()
	var onCaller, offLoop, misuseMissed atomic.Int64
	call := func(caller uintptr, i int64, checkMisuse bool) {
		r := g.Next()
		var pending *engine.Promise
		if checkMisuse {
			other := engine.New(r)
			other.Add(func(as *engine.Steps) { as.WaitExternal() })
			pending = other.Promise()
			defer func() { other.Cancel(); <-pending.Done(); other.Release() }()
		}
		done := make(chan int64, 1)
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			if goid.Current() == caller {
				onCaller.Add(1)
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
			if viaPromise {
				as.Success(engine.Int(as.Arg(0).Int() + 1))
			} else {
				done <- as.Arg(0).Int() + 1
			}
		})
		if viaPromise {
			args, err := root.Promise().Wait()
			if err != nil || args.At(0).Int() != i+1 {
				t.Errorf("call %d: %v %v", i, args, err)
			}
		} else {
			root.Execute()
			if got := <-done; got != i+1 {
				t.Errorf("call %d: got %d", i, got)
			}
		}
		root.Release()
	}
	// One caller at a time: the loops park between calls, and the caller
	// finds them parked.
	me := goid.Current()
	for i := range int64(200) {
		call(me, i, i%10 == 0)
	}
	sequential = onCaller.Load()
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
	return sequential, onCaller.Load()
}
