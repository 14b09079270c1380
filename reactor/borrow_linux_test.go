//go:build linux

package reactor

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TakeParked takes only the word of a real loop that is parked: never a
// manual reactor's, one not yet run, one running a callback, or a closed
// one's.
func TestTakeParkedRefusals(t *testing.T) {
	if X.TakeParked(NewManual()) {
		t.Fatal("TakeParked took a manual reactor's word")
	}
	idle, err := New(Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	if X.TakeParked(idle) {
		t.Fatal("TakeParked took the word of a reactor before Run")
	}
	_ = idle.Close()
	r := startLoop(t, Options{CPU: -1})
	busy := make(chan struct{})
	release := make(chan struct{})
	r.xPost(func(unsafe.Pointer, uint64) { close(busy); <-release }, nil, 0)
	<-busy
	if X.TakeParked(r) {
		t.Fatal("TakeParked took the word of a loop running a callback")
	}
	fromLoop := make(chan bool, 1)
	r.xPost(func(unsafe.Pointer, uint64) { fromLoop <- X.TakeParked(r) }, nil, 0)
	close(release)
	if <-fromLoop {
		t.Fatal("a loop's callback took its own word as a parked one")
	}
	c := closedAfterParking(t)
	if X.TakeParked(c) {
		t.Fatal("TakeParked took a closed reactor's word")
	}
}

// An OwnThread reactor lends its word to nobody, a borrow included: what a
// borrower does under it (engine's External applied there, a Bridge.Drop
// of the flow's owned values among it) runs on the borrower's thread, which
// such a reactor is made to rule out (Options.OwnThread). owe refuses it a
// hand-off for the same reason.
func TestTakeParkedRefusesOwnThread(t *testing.T) {
	r := startLoop(t, Options{CPU: -1, OwnThread: true})
	for range 20 {
		waitParked(t, r)
		if X.TakeParked(r) {
			X.GiveParked(r, false)
			t.Fatal("TakeParked took an OwnThread reactor's word")
		}
	}
}

// Work left ready under a borrowed word runs: woken by the eventfd when a
// plain goroutine borrowed it, and, when a loop's callback borrowed it, on
// that loop's goroutine right after the callback (a hand-off, as for a
// post), with the parked loop never woken. While the word is borrowed the
// borrower is the loop for IsSameThread, and only then.
func TestTakeParkedWorkRuns(t *testing.T) {
	b := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	waitParked(t, b)
	if !X.TakeParked(b) {
		t.Fatal("TakeParked refused a parked loop")
	}
	if !b.IsSameThread() {
		t.Fatal("the borrower is not the loop while it holds the word")
	}
	type seen struct {
		same bool
		g    uintptr
	}
	got := make(chan seen, 1)
	if !b.postLocal(func(unsafe.Pointer, uint64) { got <- seen{b.IsSameThread(), b.loopG.Load()} }, nil, 0) {
		t.Fatal("postLocal refused")
	}
	X.GiveParked(b, true)
	if b.IsSameThread() {
		t.Fatal("the borrower is still the loop after GiveParked")
	}
	select {
	case s := <-got:
		if !s.same || s.g == parkedG {
			t.Fatalf("the task ran off the loop (IsSameThread %v, word %#x)", s.same, s.g)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("work left under a borrowed word never ran (no wake-up)")
	}

	a := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	for round := 0; round < 50; round++ {
		waitParked(t, b)
		for !b.sleeping.Load() {
			time.Sleep(time.Microsecond)
		}
		wakeups := parkedWakeups(t, b)
		onA := make(chan uintptr, 1)
		took := make(chan bool, 1)
		a.xPost(func(unsafe.Pointer, uint64) {
			if !X.TakeParked(b) {
				took <- false
				return
			}
			me := a.loopG.Load()
			b.postLocal(func(unsafe.Pointer, uint64) {
				if b.loopG.Load() == me {
					onA <- me
				} else {
					onA <- 0
				}
			}, nil, 0)
			X.GiveParked(b, true)
			took <- true
		}, nil, 0)
		if !<-took {
			continue // b woke meanwhile (a stray wake-up): nothing to check this round
		}
		select {
		case g := <-onA:
			if g == 0 {
				t.Fatalf("round %d: the work a loop left on a parked reactor ran on that reactor's thread, not handed off", round)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: work left by a loop under a borrowed word never ran", round)
		}
		if w := parkedWakeups(t, b); w != wakeups {
			t.Fatalf("round %d: the parked loop woke %d times for a hand-off", round, w-wakeups)
		}
	}
}

// parkedWakeups reads r's Wakeups under its loop word, taken while the
// loop is parked (TakeParked), so the read itself wakes nothing. It waits
// first for any wake-up already due to land: the caller's own producers
// have all written r's eventfd by now, so one left readable is a wake-up
// the loop has yet to take (a producer's write that landed after the loop
// drained the eventfd, the cost of a post racing the loop's last look
// before sleeping), which would otherwise count against what the caller
// checks next. (Reads posted to the loop, as before, made such a race
// themselves: two back to back, and the second one's wake-up could land
// after the loop parked.)
func parkedWakeups(t *testing.T, r *Reactor) uint64 {
	t.Helper()
	for {
		waitParked(t, r)
		if X.TakeParked(r) {
			fds := []unix.PollFd{{Fd: int32(r.os.efd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 0)
			if err != nil && err != unix.EINTR {
				X.GiveParked(r, false)
				t.Fatalf("poll of the eventfd: %v", err)
			}
			if n == 0 {
				w := r.m.wakeups
				X.GiveParked(r, false)
				return w
			}
			X.GiveParked(r, false) // a wake-up is due: let the loop take it
		}
		runtime.Gosched()
	}
}

// Goroutines borrowing a parked loop's word to leave work while the
// reactor closes: each task accepted runs exactly once, never two at once,
// and Run returns nil.
func TestTakeParkedRacingClose(t *testing.T) {
	racingClose(t, Options{CPU: -1, Spin: NoSpin}, func(r *Reactor, task func(unsafe.Pointer, uint64)) bool {
		if !X.TakeParked(r) {
			return false
		}
		ok := r.postLocal(task, nil, 0)
		X.GiveParked(r, ok)
		return ok
	})
}
