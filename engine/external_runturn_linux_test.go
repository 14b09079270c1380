//go:build linux

package engine_test

import (
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// An External finished from an ordinary goroutine while the loop is
// parked runs the flow on, up to its next wait or its end, on that
// goroutine before Success returns, as the loop (IsSameThread): a
// fan-out's completions then cost no thread wake-up, and the flow's lines
// stay on one core. Here the resumed step arms a timer and watches a
// pipe from the caller's turn; both come back to the flow through the
// loop (the timerfd re-armed, the watch the loop's), and the flow ends
// with the values each hop passed on. The loop's thread is never woken
// for the completion itself.
func TestExternalOffLoopRunsTheTurnOnTheCaller(t *testing.T) {
	if pollingFallback {
		t.Skip("the Polling fallback never parks")
	}
	r := reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin})
	me := goid.Current()
	for round := 0; round < 10; round++ {
		var fds [2]int
		if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		exts := make(chan engine.External, 1)
		var resumedOn uintptr
		var resumedSame, timerSame, ioSame bool
		var pipe struct{ x engine.External }
		watching := make(chan struct{}, 1)
		root := engine.New(r)
		root.Add(func(as *engine.Steps) { exts <- as.External() })
		root.Add(func(as *engine.Steps) {
			resumedOn, resumedSame = goid.Current(), as.Reactor().IsSameThread()
			v := as.Arg(0).Int()
			x := as.External()
			as.Reactor().Deferred(time.Millisecond, func() {
				timerSame = r.IsSameThread()
				x.Success(engine.Int(v + 1))
			})
		})
		root.Add(func(as *engine.Steps) {
			pipe.x = as.External()
			v := as.Arg(0).Int()
			err := reactor.WatchTo(as.Reactor(), fds[0], reactor.InterestRead, func(p *struct{ x engine.External }, fd int, _ reactor.Event) {
				ioSame = r.IsSameThread()
				_ = r.Unwatch(fd)
				p.x.Success(engine.Int(v + 10))
			}, &pipe)
			if err != nil {
				as.Error("WatchError", err.Error())
			}
			watching <- struct{}{}
		})
		p := root.Promise()
		x := <-exts
		waitLoopParked(t, r)
		if !x.Success(engine.Int(100)) {
			t.Fatalf("round %d: Success of a waiting step reported false", round)
		}
		if resumedOn != me || !resumedSame {
			t.Fatalf("round %d: the resumed step ran on %#x (IsSameThread %v), not on the caller %#x before Success returned", round, resumedOn, resumedSame, me)
		}
		if r.IsSameThread() {
			t.Fatal("the caller is still the loop after Success")
		}
		// The flow now waits for its timer; once it watches the pipe, a
		// write wakes the loop through the watch.
		select {
		case <-watching:
		case <-p.Done():
			_, err := p.Wait()
			t.Fatalf("round %d: the flow ended before it watched the pipe: %v", round, err)
		case <-time.After(reactortest.Hang):
			t.Fatalf("round %d: the timer armed in the caller's turn never fired", round)
		}
		if _, err := unix.Write(fds[1], []byte{1}); err != nil {
			t.Fatal(err)
		}
		args, err := realWait(t, p, "the flow resumed on the caller")
		wantNoErr(t, err)
		if got := args.At(0).Int(); got != 111 {
			t.Fatalf("round %d: flow ended with %d, want 111", round, got)
		}
		if !timerSame || !ioSame {
			t.Fatalf("round %d: the timer (on the loop: %v) or the watch (%v) ran off the loop", round, timerSame, ioSame)
		}
		root.Release()
		unix.Close(fds[0])
		unix.Close(fds[1])
	}
}

// Inside the caller's turn the misuse checks still hold: Promise.Wait for
// a flow of the same reactor panics (it would deadlock), which the step's
// recover turns into the flow's InternalError, and the caller goes on.
func TestExternalOffLoopTurnKeepsWaitMisuse(t *testing.T) {
	if pollingFallback {
		t.Skip("the Polling fallback never parks")
	}
	r := reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin})
	other := engine.New(r)
	other.Add(func(as *engine.Steps) { as.External() }) // never finished: waits until released
	op := other.Promise()
	defer other.Release()
	exts := make(chan engine.External, 1)
	ranOnCaller := false
	me := goid.Current()
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { exts <- as.External() })
	root.Add(func(*engine.Steps) {
		ranOnCaller = goid.Current() == me
		_, _ = op.Wait()
	})
	p := root.Promise()
	x := <-exts
	waitLoopParked(t, r)
	if !x.Success() {
		t.Fatal("Success of a waiting step reported false")
	}
	if !ranOnCaller {
		t.Fatal("the resumed step did not run on the caller")
	}
	_, err := realWait(t, p, "the flow whose step waited on its own loop")
	wantCode(t, err, engine.InternalError)
	root.Release()
}

// Many goroutines finishing the Externals of many flows of one reactor at
// once, and so running its turns in its place one at a time, while the
// loop wakes and parks between them: every flow gets its own value once,
// its second step runs once, and the flows all end; then Close racing
// goroutines that still finish Externals ends every flow and the loop.
func TestExternalOffLoopManyCallersAndClose(t *testing.T) {
	if pollingFallback {
		t.Skip("the Polling fallback never parks")
	}
	const callers, flows = 8, 64
	for _, closeEarly := range []bool{false, true} {
		r, ran := reactortest.StartRun(t, reactor.Options{CPU: -1})
		exts := make(chan engine.External, flows)
		seen := make([]int64, flows) // loop-owned: written by the flows' steps
		roots := make([]*engine.Steps, flows)
		ps := make([]*engine.Promise, flows)
		for i := range roots {
			roots[i] = engine.New(r)
			roots[i].Add(func(as *engine.Steps) { exts <- as.External() })
			roots[i].Add(func(as *engine.Steps) { seen[as.Arg(0).Int()]++ })
			ps[i] = roots[i].Promise()
		}
		got := make([]engine.External, 0, flows)
		for range flows {
			got = append(got, <-exts)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for c := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := c; i < flows; i += callers {
					// The flows' order in got is their steps' order;
					// each flow is told its own index through seen.
					got[i].Success(engine.Int(int64(i)))
				}
			}()
		}
		close(start)
		if closeEarly {
			reactortest.CloseAndWait(t, r, ran)
		}
		wg.Wait()
		for i, p := range ps {
			_, err := realWait(t, p, "a flow finished by one of many callers")
			if closeEarly {
				continue // ended one way or the other
			}
			wantNoErr(t, err)
			if seen[i] != 1 {
				t.Fatalf("flow %d: its second step ran %d times, want 1", i, seen[i])
			}
		}
		for _, root := range roots {
			root.Release()
		}
		if !closeEarly {
			reactortest.CloseAndWait(t, r, ran)
		}
	}
}
