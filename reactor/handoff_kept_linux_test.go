//go:build linux

package reactor

import (
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// keptHandOff has a's loop borrow parked b's word, leave task ready there
// and give the word back (the engine's External on a parked reactor: a
// Mutex hand-over), then run between, still inside a's callback, before
// the callback returns and a pays the turn it owes b. It reports false
// when b was not parked (a stray wake-up: nothing to check this round).
func keptHandOff(t *testing.T, a, b *Reactor, task func(unsafe.Pointer, uint64), between func()) bool {
	t.Helper()
	waitParked(t, b)
	waitFlag(t, b)
	took := make(chan bool, 1)
	a.xPost(func(unsafe.Pointer, uint64) {
		if !X.TakeParked(b) {
			took <- false
			return
		}
		b.postLocal(task, nil, 0)
		X.GiveParked(b, true)
		if between != nil {
			between()
		}
		took <- true
	}, nil, 0)
	return <-took
}

// A hand-off made under a borrowed word leaves the parked loop's sleeping
// flag set (oweKept): the owed turn runs on the borrowing loop's
// goroutine, gives nothing back, and the parked loop neither wakes nor
// loses its flag, so the next producer still wakes it.
//
// b's wake-ups are read under its word while it stays parked
// (parkedWakeups), so the reads wake nothing and no producer but the
// hand-off touches b in a round: the count must not move at all.
func TestKeptHandOffLeavesLoopAsleep(t *testing.T) {
	a := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	b := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	checked := 0
	for round := 0; round < 50; round++ {
		waitFlag(t, b)
		wakeups := parkedWakeups(t, b)
		me := make(chan bool, 1)
		aG := uintptr(0)
		if !keptHandOff(t, a, b, func(unsafe.Pointer, uint64) { me <- b.loopG.Load() == aG }, func() {
			aG = a.loopG.Load()
			if !b.sleeping.Load() {
				t.Errorf("round %d: the hand-off cleared the parked loop's sleeping flag", round)
			}
		}) {
			continue
		}
		select {
		case onA := <-me:
			if !onA {
				t.Fatalf("round %d: the owed turn did not run on the borrowing loop's goroutine", round)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: work handed off under a kept flag never ran", round)
		}
		if w := parkedWakeups(t, b); w != wakeups {
			t.Fatalf("round %d: the parked loop woke %d times for a kept hand-off", round, w-wakeups)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no round found b parked")
	}
	// The flag is still the loop's: a plain goroutine's post wakes it.
	waitParked(t, b)
	waitFlag(t, b)
	postRunsOnParked(t, b, "kept hand-offs")
}

// Producers that post to the parked reactor between the kept hand-off and
// the owed turn: the borrowing loop itself (its post owes the same turn,
// which then holds the kick duty and gives the flag back), and a plain
// goroutine (it sees the flag set and kicks, as for any parked loop). All
// the work runs once, and the loop parks with its flag set again, woken by
// the next post.
func TestKeptHandOffWithProducers(t *testing.T) {
	a := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	b := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	producers := []struct {
		name string
		post func(task func(unsafe.Pointer, uint64))
	}{
		{"the borrowing loop", func(task func(unsafe.Pointer, uint64)) { b.xPost(task, nil, 0) }},
		{"a goroutine", func(task func(unsafe.Pointer, uint64)) {
			done := make(chan struct{})
			go func() { b.xPost(task, nil, 0); close(done) }()
			<-done
		}},
	}
	for _, p := range producers {
		t.Run(p.name, func(t *testing.T) {
			for round := 0; round < 30; round++ {
				ran := make(chan int, 2)
				if !keptHandOff(t, a, b, func(unsafe.Pointer, uint64) { ran <- 1 }, func() {
					p.post(func(unsafe.Pointer, uint64) { ran <- 2 })
				}) {
					continue
				}
				seen := map[int]bool{}
				for len(seen) < 2 {
					select {
					case k := <-ran:
						if seen[k] {
							t.Fatalf("round %d: task %d ran twice", round, k)
						}
						seen[k] = true
					case <-time.After(10 * time.Second):
						t.Fatalf("round %d: ran %v of the hand-off (1) and the post (2): lost", round, seen)
					}
				}
				waitParked(t, b)
				waitFlag(t, b)
			}
			postRunsOnParked(t, b, "the rounds")
		})
	}
}

// postRunsOnParked posts to b, parked with its sleeping flag set, from
// the test's goroutine and fails the test unless the post runs: after what
// came before (named by after), the parked loop must still be woken.
func postRunsOnParked(t *testing.T, b *Reactor, after string) {
	t.Helper()
	ran := make(chan struct{})
	b.xPost(func(unsafe.Pointer, uint64) { close(ran) }, nil, 0)
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatalf("a post after %s never ran: the parked loop lost its wake-up", after)
	}
}

// waitFlag waits until r's sleeping flag is set, failing the test if it
// never is: a parked loop whose flag stays clear is never woken again.
func waitFlag(t *testing.T, r *Reactor) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !r.sleeping.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the loop's sleeping flag stayed clear: no producer would wake it")
		}
		runtime.Gosched()
	}
}
