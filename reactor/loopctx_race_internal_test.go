//go:build race || asyncsteps_debug

package reactor

import "testing"

// Under -race (and -tags asyncsteps_debug) a Loop checks the caller's own identity too: handed to
// another goroutine while the goroutine that made it still holds the loop
// word (the misuse the build without -race does not see), its Immediate
// takes Reactor.Immediate's path, which posts through the ring, and its
// RunUntilIdle Reactor.RunUntilIdle's, which waits for the drive to end.
func TestLoopFromAnotherGoroutineUnderRace(t *testing.T) {
	r := NewManual()
	var h Handle
	ran := 0
	r.Immediate(func() {
		l, ok := r.Loop()
		if !ok {
			t.Error("Loop() off the loop in a callback")
			return
		}
		done := make(chan struct{})
		go func() { h = l.Immediate(func() { ran++ }); close(done) }()
		<-done
	})
	r.RunUntilIdle()
	if h.kind != handleRemote {
		t.Errorf("Loop.Immediate from another goroutine while its loop runs: Handle kind %d, want %d (through the ring)", h.kind, handleRemote)
	}
	if ran != 1 {
		t.Errorf("the task ran %d times, want 1", ran)
	}
}
