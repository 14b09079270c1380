//go:build linux

package reactor

import (
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/goid"
)

// An ordinary goroutine that borrows a parked loop's word with
// TakeParkedRun runs the flows it made ready itself when it gives the word
// back: they run on the caller, as the loop (IsSameThread), before
// GiveParkedRun returns, and the loop's thread is never woken. A timer a
// flow adds still fires (the timerfd re-armed before the word goes back),
// on the loop.
func TestTakeParkedRunRunsTheFlowsOnTheCaller(t *testing.T) {
	r := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	fx := attachFlows(r)
	me := goid.Current()
	for round := 0; round < 20; round++ {
		wakeups := parkedWakeups(t, r)
		tok := X.TakeParkedRun(r)
		if !X.Taken(tok) {
			continue // the loop woke between the two looks: try again
		}
		if tok < 0 {
			X.GiveParkedRun(r, tok, false)
			t.Fatalf("round %d: an ordinary goroutine got the plain borrow (%d), not a turn", round, tok)
		}
		if !r.IsSameThread() {
			t.Fatal("the borrower is not the loop while it holds the word")
		}
		var ranOn uintptr
		var same bool
		fired := make(chan bool, 1)
		fx.ready(func() {
			ranOn, same = goid.Current(), r.IsSameThread()
			r.Deferred(time.Millisecond, func() { fired <- r.IsSameThread() })
		})
		X.GiveParkedRun(r, tok, true)
		if ranOn != me || !same {
			t.Fatalf("round %d: the ready work ran on %#x (IsSameThread %v), not on the caller %#x before GiveParkedRun returned", round, ranOn, same, me)
		}
		if r.IsSameThread() {
			t.Fatal("the caller is still the loop after GiveParkedRun")
		}
		select {
		case onLoop := <-fired:
			if !onLoop {
				t.Fatal("the timer's callback ran off the loop")
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: a timer added in the caller's turn never fired (timerfd not re-armed)", round)
		}
		if got := parkedWakeups(t, r) - wakeups; got != 1 {
			// The timer's wake-up, and only it: the turn itself woke nobody.
			t.Fatalf("round %d: %d wake-ups, want 1 (the timer's)", round, got)
		}
	}
}

// The caller runs the ready flows once, never a long turn: a flow that
// is still ready after its run (one that never waits, queued again at
// the end of its budget), and a task a flow posts, are the loop's, which
// is woken for them and runs them on its own goroutine.
func TestTakeParkedRunLeavesTheRestToTheLoop(t *testing.T) {
	r := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	fx := attachFlows(r)
	me := goid.Current()
	for round := 0; round < 20; round++ {
		waitParked(t, r)
		tok := X.TakeParkedRun(r)
		if !X.Taken(tok) {
			continue
		}
		var first, again uintptr
		posted := make(chan uintptr, 1)
		done := make(chan struct{})
		fx.ready(func() {
			first = goid.Current()
			fx.ready(func() { again = goid.Current(); close(done) })
			r.postLocal(func(unsafe.Pointer, uint64) { posted <- goid.Current() }, nil, 0)
		})
		X.GiveParkedRun(r, tok, true)
		if first != me {
			t.Fatalf("round %d: the flow made ready ran on %#x, not on the caller", round, first)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the flow left ready never ran (the loop was not woken)", round)
		}
		if again == me || again == 0 {
			t.Fatalf("round %d: the flow left ready ran on %#x, the caller's turn: want the loop's", round, again)
		}
		if g := <-posted; g == me {
			t.Fatalf("round %d: the task a flow posted ran on the caller", round)
		}
	}
}

// A token with nothing left ready gives the word and the assist slot back
// without a turn: the next borrow finds both free.
func TestTakeParkedRunNothingReady(t *testing.T) {
	r := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	for range 100 {
		waitParked(t, r)
		tok := X.TakeParkedRun(r)
		if !X.Taken(tok) {
			continue
		}
		X.GiveParkedRun(r, tok, false)
		if r.IsSameThread() {
			t.Fatal("the word is still the caller's")
		}
		if slot, ok := claimAssist(goid.Current()); !ok {
			t.Fatal("the assist slot was not given back")
		} else {
			releaseAssist(slot)
		}
	}
}

// A loop's callback, and a goroutine inside a turn it runs in a loop's
// place, get the plain borrow (the loop's owed turn, or a wake-up), never
// a turn of their own: a turn inside a turn would run one reactor's flows
// in the middle of another's callback. A manual reactor, an OwnThread
// one, a closed one and a busy loop lend nothing.
func TestTakeParkedRunRefusalsAndBorrows(t *testing.T) {
	if X.Taken(X.TakeParkedRun(NewManual())) {
		t.Fatal("TakeParkedRun took a manual reactor's word")
	}
	own := startLoop(t, Options{CPU: -1, OwnThread: true})
	waitParked(t, own)
	if tok := X.TakeParkedRun(own); X.Taken(tok) {
		X.GiveParkedRun(own, tok, false)
		t.Fatal("TakeParkedRun took an OwnThread reactor's word")
	}
	b := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	busy, release := make(chan struct{}), make(chan struct{})
	b.xPost(func(unsafe.Pointer, uint64) { close(busy); <-release }, nil, 0)
	<-busy
	if tok := X.TakeParkedRun(b); X.Taken(tok) {
		X.GiveParkedRun(b, tok, false)
		t.Fatal("TakeParkedRun took the word of a loop running a callback")
	}
	close(release)

	a := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	fromLoop := make(chan int, 1)
	for {
		waitParked(t, b)
		a.xPost(func(unsafe.Pointer, uint64) {
			tok := X.TakeParkedRun(b)
			X.GiveParkedRun(b, tok, false)
			fromLoop <- tok
		}, nil, 0)
		if tok := <-fromLoop; X.Taken(tok) {
			if tok != takenBorrow {
				t.Fatalf("a loop's callback got %d, want the plain borrow", tok)
			}
			break
		}
	}
	fromAssist := make(chan int, 1)
	for {
		waitParked(t, a)
		waitParked(t, b)
		pushQuiet(t, a, func(unsafe.Pointer, uint64) {
			tok := X.TakeParkedRun(b)
			X.GiveParkedRun(b, tok, false)
			fromAssist <- tok
		})
		if !a.Assist() {
			<-fromAssist // the loop woke and ran it: try again
			continue
		}
		if tok := <-fromAssist; X.Taken(tok) {
			if tok != takenBorrow {
				t.Fatalf("a goroutine inside an assist got %d, want the plain borrow", tok)
			}
			break
		}
	}

	c := closedAfterParking(t)
	if X.Taken(X.TakeParkedRun(c)) {
		t.Fatal("TakeParkedRun took a closed reactor's word")
	}
}

// A panic that gets past every recover of the caller's turn (one the
// attached layer does not catch) reaches the caller with the word given
// back and the loop woken: the reactor goes on.
func TestTakeParkedRunPanicGivesTheWordBack(t *testing.T) {
	r := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	fx := attachFlows(r)
	for {
		waitParked(t, r)
		tok := X.TakeParkedRun(r)
		if !X.Taken(tok) {
			continue
		}
		fx.ready(func() {
			// Off the fake's queue first (the engine's batch would
			// have unlinked the flow), so the loop finds it empty.
			fx.q, *fx.pending = fx.q[:0], false
			panic("boom")
		})
		got := func() (v any) {
			defer func() { v = recover() }()
			X.GiveParkedRun(r, tok, true)
			return nil
		}()
		if got != "boom" {
			t.Fatalf("the caller recovered %v, want the task's panic", got)
		}
		break
	}
	if r.IsSameThread() {
		t.Fatal("the word is still the caller's after the panic")
	}
	done := make(chan struct{})
	r.Immediate(func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the reactor stopped after a panic in a caller's turn")
	}
}

// Many goroutines borrowing one parked loop at once with turns: one holds
// the word at a time (the work each leaves runs once, as the loop), and
// Close racing them ends the loop cleanly.
func TestTakeParkedRunManyAndClose(t *testing.T) {
	if forcePolling {
		t.Skip("the Polling fallback never parks: nothing to borrow")
	}
	r, err := New(Options{CPU: -1, Spin: NoSpin})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	fx := attachFlows(r)
	go func() { ran <- r.Run() }()
	const enough = 200
	var inTurn, overlaps, runs int64 // loop-owned: written under the word only
	reached := make(chan struct{})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				tok := X.TakeParkedRun(r)
				if !X.Taken(tok) {
					runtime.Gosched()
					continue
				}
				fx.ready(func() {
					if inTurn++; inTurn != 1 {
						overlaps++
					}
					if runs++; runs == enough {
						close(reached)
					}
					inTurn--
				})
				X.GiveParkedRun(r, tok, true)
			}
		}()
	}
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Error("the borrowers' turns never ran enough work")
	}
	_ = r.Close() // while they still borrow
	close(stop)
	wg.Wait()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if overlaps != 0 {
		t.Fatalf("%d turns overlapped", overlaps)
	}
}
