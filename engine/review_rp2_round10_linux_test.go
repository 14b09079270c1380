//go:build linux

package engine_test

import (
	"runtime"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A step that an off-loop External.Success runs on its caller and that
// ends the goroutine (runtime.Goexit: t.FailNow in a step) ends the
// caller's goroutine inside Success, as it would end the loop's in any
// turn: the word goes back, the loop is woken, and the reactor goes on:
// the next off-loop completion again runs its flow on its own caller, and
// Close ends the exited flow.
func TestReviewRP2Round10GoexitOnTheCaller(t *testing.T) {
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
	if on != goid.Current() || !same || !loopG {
		t.Fatalf("second flow's step ran on %#x (IsSameThread %v, IsLoopGoroutine %v), want the caller %#x as the loop", on, same, loopG, goid.Current())
	}
	if r.IsSameThread() || r.IsLoopGoroutine() {
		t.Fatal("the caller still counts as the loop after Success returned")
	}
	next.Release()
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
func TestReviewRP2Round10NestedCompletionGoesToTheOtherLoop(t *testing.T) {
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
