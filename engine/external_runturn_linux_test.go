//go:build linux

package engine_test

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
	"golang.org/x/sys/unix"
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

// A step that an off-loop External.Success runs on its caller and that
// ends the goroutine (runtime.Goexit: t.FailNow in a step) ends the
// caller's goroutine inside Success, as it would end the loop's in any
// turn: the word goes back, the loop is woken, and the reactor goes on:
// the next off-loop completion again runs its flow on its own caller, and
// Close ends the exited flow.
func TestExternalOffLoopGoexitOnTheCaller(t *testing.T) {
	if pollingFallback {
		t.Skip("the Polling fallback never parks")
	}
	r, ran := reactortest.StartRun(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin})
	exts := make(chan engine.External, 1)
	exiting := engine.New(r)
	exiting.Add(func(as *engine.Steps) { exts <- as.External() })
	exiting.Add(func(*engine.Steps) { runtime.Goexit() })
	ep := exiting.Promise()
	x := <-exts
	waitLoopParked(t, r)
	type seen struct {
		g        uintptr
		returned bool
	}
	out := make(chan seen, 1)
	go func() {
		s := seen{g: goid.Current()}
		defer func() { out <- s }()
		x.Success()
		s.returned = true
	}()
	s := <-out
	if s.returned {
		t.Skip("the loop woke before the Success: the step ran on the loop") // a step's Goexit there ends the loop: not this test's
	}
	// The reactor goes on: a second flow's completion runs on its caller.
	// The loop may wake between waitLoopParked and the Success (a spurious
	// wake-up: the step then runs on the loop, as the first half skips
	// for), so a few tries, each checked in full when it ran on the caller.
	onCaller := false
	for try := 0; try < 10 && !onCaller; try++ {
		next := engine.New(r)
		next.Add(func(as *engine.Steps) { exts <- as.External() })
		var on uintptr
		var same, loopG bool
		next.Add(func(as *engine.Steps) {
			on, same, loopG = goid.Current(), as.Reactor().IsSameThread(), as.Reactor().IsLoopGoroutine()
			as.Success(engine.Int(5))
		})
		np := next.Promise()
		y := <-exts
		waitLoopParked(t, r)
		if !y.Success() {
			t.Fatal("Success of the second flow's waiting step reported false")
		}
		args, err := realWait(t, np, "the flow after the exited one")
		wantNoErr(t, err)
		if args.At(0).Int() != 5 {
			t.Fatalf("second flow ended with %d, want 5", args.At(0).Int())
		}
		if !same || !loopG {
			t.Fatalf("second flow's step ran on %#x with IsSameThread %v, IsLoopGoroutine %v, want both true", on, same, loopG)
		}
		onCaller = on == goid.Current()
		if r.IsSameThread() || r.IsLoopGoroutine() {
			t.Fatal("the caller still counts as the loop after Success returned")
		}
		next.Release()
	}
	if !onCaller {
		t.Skip("the loop woke before each of 10 Successes: no completion ran on its caller")
	}
	reactortest.CloseAndWait(t, r, ran)
	if _, err := realWait(t, ep, "the exited flow after Close"); err == nil {
		t.Fatal("the exited flow ended with success")
	}
	exiting.Release()
}

// A step run on the caller of an off-loop Success that itself finishes a
// waiting step of another parked reactor takes that reactor's word for the
// result only (the caller is inside a turn run in a loop's place, and
// never runs a second reactor's turn from a callback): the other flow runs
// on its own loop, not nested on the caller, and both flows end.
func TestExternalOffLoopNestedCompletionGoesToTheOtherLoop(t *testing.T) {
	if pollingFallback {
		t.Skip("the Polling fallback never parks")
	}
	a := reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin})
	b := reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin})
	for round := 0; round < 10; round++ {
		aExt := make(chan engine.External, 1)
		bExt := make(chan engine.External, 1)
		me := goid.Current()

		bRoot := engine.New(b)
		bRoot.Add(func(as *engine.Steps) { bExt <- as.External() })
		var bOn uintptr
		var bSame, bOnLoop bool
		bRoot.Add(func(as *engine.Steps) {
			bOn, bSame, bOnLoop = goid.Current(), b.IsSameThread(), a.IsSameThread()
			as.Success(engine.Int(as.Arg(0).Int() + 1))
		})
		bp := bRoot.Promise()
		by := <-bExt

		aRoot := engine.New(a)
		aRoot.Add(func(as *engine.Steps) { aExt <- as.External() })
		var aOn uintptr
		var accepted bool
		aRoot.Add(func(as *engine.Steps) {
			aOn = goid.Current()
			waitLoopParkedFrom(b)
			accepted = by.Success(engine.Int(10))
		})
		ap := aRoot.Promise()
		ax := <-aExt
		waitLoopParked(t, a)
		if !ax.Success() {
			t.Fatalf("round %d: a's Success reported false", round)
		}
		if aOn != me {
			t.Skipf("round %d: a's loop woke before the Success (its step ran on %#x)", round, aOn)
		}
		if !accepted {
			t.Fatalf("round %d: b's Success from a's step on the caller reported false", round)
		}
		_, err := realWait(t, ap, "a's flow")
		wantNoErr(t, err)
		args, err := realWait(t, bp, "b's flow finished from a step on the caller")
		wantNoErr(t, err)
		if args.At(0).Int() != 11 {
			t.Fatalf("round %d: b's flow ended with %d, want 11", round, args.At(0).Int())
		}
		if bOn == me || !bSame || bOnLoop {
			t.Fatalf("round %d: b's step ran on %#x (caller %#x), b.IsSameThread %v, a.IsSameThread %v: want b's own loop", round, bOn, me, bSame, bOnLoop)
		}
		aRoot.Release()
		bRoot.Release()
	}
}

// waitLoopParkedFrom is waitLoopParked for a step (no testing.T): it spins
// until r's loop is parked.
func waitLoopParkedFrom(r *reactor.Reactor) {
	for !reactor.X.TakeParked(r) {
		runtime.Gosched()
	}
	reactor.X.GiveParked(r, false)
}
