//go:build linux

package reactor

import (
	"testing"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/storerel"
)

// A nil callback given to PostRun on a parked loop runs directly
// (directTurn), and one given to PostLazy goes through the ring: both
// reach the panic handler with the nil Post's name, as on the local
// queue, and the reactor goes on.
func TestNilPostNamedThroughPostRunAndPostLazy(t *testing.T) {
	panics := make(chan any, 4)
	r := startLoop(t, Options{CPU: -1, PanicHandler: func(v any) { panics <- v }})
	for _, tc := range []struct {
		name string
		post func() bool
	}{
		{"PostRun", func() bool { return X.PostRun(r, nil, nil, 0) }},
		{"PostLazy", func() bool {
			ok := X.PostLazy(r, nil, nil, 0)
			X.Wake(r)
			return ok
		}},
	} {
		waitParked(t, r)
		if !tc.post() {
			t.Fatalf("%s(nil) reported false on an open reactor", tc.name)
		}
		if v := <-panics; v != "reactor: Post with a nil callback" {
			t.Fatalf("%s(nil): panic %v, want one naming the nil Post", tc.name, v)
		}
	}
}

// underParkedWord runs fn holding r's loop word while its loop is parked,
// as a borrower does (borrow_linux.go), and gives the word back without
// waking the loop.
func underParkedWord(t *testing.T, r *Reactor, fn func()) {
	t.Helper()
	me := goid.Current()
	for {
		waitParked(t, r)
		if r.loopG.CompareAndSwap(parkedG, me) {
			break
		}
	}
	fn()
	storerel.Uintptr(&r.loopG, parkedG)
}

// A PostRun task is counted once, in Metrics.TasksRun, whichever way the
// parked loop's turn takes it: run directly (directTurn, nothing else
// waiting), or queued behind local work already there (postRun's local
// branch), where it must not also count as a local task taken in
// TimersFired (the local queue's head counts those, LoopMetrics).
func TestPostRunCountedOnceInMetrics(t *testing.T) {
	r := startLoop(t, Options{CPU: -1})
	ran := make(chan int, 2)
	task := func(_ unsafe.Pointer, aux uint64) { ran <- int(aux) }
	for _, tc := range []struct {
		name   string
		queued bool // local work waits on the parked loop: the local branch
	}{
		{"direct", false},
		{"behind local work", true},
	} {
		var before, after Metrics
		underParkedWord(t, r, func() {
			before = r.LoopMetrics()
			if tc.queued {
				r.postLocal(task, nil, 1) // a local post the loop was not woken for
			}
		})
		if !X.PostRun(r, task, nil, 2) {
			t.Fatalf("%s: PostRun refused on an open reactor", tc.name)
		}
		if tc.queued {
			if got := <-ran; got != 1 {
				t.Fatalf("%s: ran %d first, want the local task", tc.name, got)
			}
		}
		if got := <-ran; got != 2 {
			t.Fatalf("%s: ran %d, want the PostRun task", tc.name, got)
		}
		underParkedWord(t, r, func() { after = r.LoopMetrics() })
		wantTimers := uint64(0)
		if tc.queued {
			wantTimers = 1 // the local post, not the PostRun task
		}
		if d := after.TasksRun - before.TasksRun; d != 1 {
			t.Errorf("%s: TasksRun grew by %d, want 1", tc.name, d)
		}
		if d := after.TimersFired - before.TimersFired; d != wantTimers {
			t.Errorf("%s: TimersFired grew by %d, want %d", tc.name, d, wantTimers)
		}
		if d := after.Iterations - before.Iterations; d != 1 {
			t.Errorf("%s: Iterations grew by %d, want 1", tc.name, d)
		}
	}
}
