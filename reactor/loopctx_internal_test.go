package reactor

import (
	"strings"
	"testing"
	"time"
)

// A real loop holds its word between iterations (spinning, running the
// next): a Loop kept past the iteration that made it is told apart by
// loopGen. Used from another goroutine once that iteration has ended, its
// Immediate posts through the ring (Reactor.Immediate's path: the task
// runs, the Handle is a ring Handle) and its RunUntilIdle panics naming
// the mistake, as Reactor.RunUntilIdle's does off a real loop. Without
// the generation, both would have taken the loop's local path on this
// goroutine while the loop ran.
func TestLoopKeptPastItsIterationOnARealLoop(t *testing.T) {
	// A long spin keeps the loop awake, holding its word, after each
	// iteration: the word alone would not tell kept apart.
	r, err := New(Options{Spin: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- r.Run() }()
	got := make(chan Loop, 1)
	r.Immediate(func() { l, _ := r.Loop(); got <- l })
	kept := <-got
	// Wait until the iteration that made kept is over: a task that runs
	// in a later iteration (or finds the word parked) says so.
	for moved := false; !moved; {
		ch := make(chan bool, 1)
		r.Immediate(func() { ch <- r.loopGen != kept.gen })
		moved = <-ch
	}
	if r.loopG.Load() != kept.g {
		t.Log("the loop is not spinning: this run tests the word, not the generation")
	}
	ran := make(chan struct{})
	h := kept.Immediate(func() { close(ran) })
	if h.kind != handleRemote {
		t.Errorf("a kept Loop's Immediate from another goroutine: Handle kind %d, want %d (through the ring)", h.kind, handleRemote)
	}
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("a kept Loop's Immediate on a real reactor never ran")
	}
	msg := func() (msg string) {
		defer func() { msg, _ = recover().(string) }()
		kept.RunUntilIdle()
		return ""
	}()
	if !strings.Contains(msg, "real reactor") {
		t.Errorf("a kept Loop's RunUntilIdle on a real reactor: panic %q, want one naming the mistake", msg)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-runDone; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// Within one drive of a manual reactor a Loop stays held across nested
// drives (they do not begin outermost iterations), and stops being held
// when an Iterate, nested or outermost, begins one; it is held again by
// none that comes after (a fresh Loop is).
func TestLoopHeldAcrossNestedDrives(t *testing.T) {
	r := NewManual()
	var heldAfterNested, heldAfterIterate, freshHeld bool
	r.Immediate(func() {
		l, _ := r.Loop()
		r.Immediate(func() {})
		l.RunUntilIdle()
		r.RunUntilIdle()
		heldAfterNested = l.held()
		r.Iterate() // a nested outermost-kind iteration: loopGen moves
		heldAfterIterate = l.held()
		l2, _ := r.Loop()
		freshHeld = l2.held()
	})
	r.RunUntilIdle()
	if !heldAfterNested || heldAfterIterate || !freshHeld {
		t.Errorf("held after nested RunUntilIdle %v (want true), after a nested Iterate %v (want false), a fresh Loop %v (want true)",
			heldAfterNested, heldAfterIterate, freshHeld)
	}
}

// A manual reactor's driver drives it again (RunUntilIdle, the usual
// drive, which begins no outermost iteration): a Loop made in the earlier
// drive and used by another goroutine during the later one must take the
// checked path (Reactor.Immediate: through the ring), not the local
// queue that the driver owns. The use is made while the driver waits in
// a callback of its second drive, so the outcome does not depend on timing.
func TestLoopKeptPastItsDriveUsedDuringTheNext(t *testing.T) {
	cases := []struct {
		name  string
		drive func(r *Reactor)
	}{
		{"RunUntilIdle", func(r *Reactor) { r.RunUntilIdle() }},
		{"Iterate", func(r *Reactor) { r.Iterate() }},
		{"Advance", func(r *Reactor) { r.Advance(0) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewManual()
			var kept Loop
			r.Immediate(func() { kept, _ = r.Loop() })
			r.RunUntilIdle()
			var h Handle
			ran := 0
			r.Immediate(func() {
				done := make(chan struct{})
				go func() { h = kept.Immediate(func() { ran++ }); close(done) }()
				<-done
			})
			c.drive(r)
			r.RunUntilIdle()
			if h.kind != handleRemote {
				t.Errorf("a Loop kept from an earlier drive, used by another goroutine during the next: Handle kind %d, want %d (through the ring)", h.kind, handleRemote)
			}
			if ran != 1 {
				t.Errorf("the task ran %d times, want 1", ran)
			}
		})
	}
}
