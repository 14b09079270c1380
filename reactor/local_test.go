package reactor

import (
	"testing"
	"time"
	"unsafe"
)

// Immediate and Post made on the loop share one FIFO; a local task
// canceled before it runs never runs and is no longer valid.
func TestLocalQueueOrderAndCancelOnLoop(t *testing.T) {
	r := NewManual()
	var got []int
	add := func(i int) func() { return func() { got = append(got, i) } }
	r.Immediate(func() {
		r.Immediate(add(1))
		r.xPost(func(unsafe.Pointer, uint64) { got = append(got, 2) }, nil, 0)
		h := r.Immediate(add(99))
		r.Immediate(add(3))
		if h.kind != handleLocal || !r.IsValid(h) {
			t.Errorf("handle %+v: want a valid local handle", h)
		}
		r.Cancel(h)
		if r.IsValid(h) {
			t.Error("canceled local task still valid")
		}
	})
	r.RunUntilIdle()
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("ran %v, want [1 2 3]", got)
	}
}

// A goroutine that finds a manual reactor idle queues locally; the Handle
// it gets is valid until the task runs, and Cancel from that goroutine
// stops it.
func TestLocalQueueFromIdleManualGoroutine(t *testing.T) {
	r := NewManual()
	ran := 0
	h := r.Immediate(func() { ran++ })
	if h.kind != handleLocal {
		t.Fatalf("Immediate on an idle manual reactor: handle kind %d, want local", h.kind)
	}
	if !r.IsValid(h) {
		t.Fatal("pending local task not valid")
	}
	r.Cancel(h)
	if r.IsValid(h) {
		t.Fatal("canceled local task valid")
	}
	h2 := r.Immediate(func() { ran += 10 })
	r.RunUntilIdle()
	if ran != 10 || r.IsValid(h2) {
		t.Fatalf("ran %d (want 10), handle valid after run: %v", ran, r.IsValid(h2))
	}
	if r.remote.timerPending.Load() != 0 {
		t.Fatal("a cancel mark was left behind")
	}
}

// A callback that reposts itself runs once per iteration: the local queue
// cannot starve the rest of the loop, and a nested drive inside a local
// callback does not make the outer drain run past its end.
func TestLocalQueueBoundedPerIteration(t *testing.T) {
	r := NewManual()
	n := 0
	var again func()
	again = func() {
		n++
		if n < 5 {
			r.Immediate(again)
		}
	}
	r.Immediate(again)
	if !r.Iterate() || n != 1 {
		t.Fatalf("after one iteration: n=%d, want 1 and more work", n)
	}
	r.RunUntilIdle()
	if n != 5 {
		t.Fatalf("n=%d, want 5", n)
	}
	inner := 0
	r.Immediate(func() {
		r.Immediate(func() { inner++ })
		r.RunUntilIdle() // nested: runs the inner task
		r.Immediate(func() { inner += 10 })
	})
	r.RunUntilIdle()
	if inner != 11 {
		t.Fatalf("inner=%d, want 11", inner)
	}
}

// On a running real loop a local task canceled from another goroutine
// while the loop is busy never runs, and the cancel mark is taken back.
func TestLocalQueueOffLoopCancelOnRealLoop(t *testing.T) {
	r, err := New(Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	go r.Run()
	defer r.Close()
	made := make(chan Handle)
	release := make(chan struct{})
	ran := make(chan struct{}, 1)
	done := make(chan struct{})
	r.Immediate(func() {
		made <- r.Immediate(func() { ran <- struct{}{} })
		<-release // the loop is busy: the canceler cannot take it
	})
	h := <-made
	if h.kind != handleLocal {
		t.Fatalf("handle kind %d, want local", h.kind)
	}
	r.Cancel(h)
	if r.IsValid(h) {
		close(release)
		t.Fatal("canceled local task valid")
	}
	close(release)
	r.Immediate(func() { close(done) })
	<-done
	select {
	case <-ran:
		t.Fatal("canceled local task ran")
	default:
	}
	deadline := time.Now().Add(5 * time.Second)
	for r.remote.timerPending.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("cancel mark never taken back")
		}
		time.Sleep(time.Millisecond)
	}
}

// Cancel of a local handle from another goroutine while a manual reactor
// is being driven does not wait for the drive (whose callback may be
// waiting for the canceler), and the task does not run.
func TestLocalQueueCancelDuringManualDrive(t *testing.T) {
	r := NewManual()
	ran := false
	var h Handle
	canceled := make(chan struct{})
	r.Immediate(func() {
		go func() { r.Cancel(h); close(canceled) }()
		<-canceled // the drive waits for the canceler
	})
	h = r.Immediate(func() { ran = true }) // idle: queued locally, behind the blocker
	if h.kind != handleLocal {
		t.Fatalf("handle kind %d, want local", h.kind)
	}
	r.RunUntilIdle()
	if ran {
		t.Fatal("canceled local task ran")
	}
	if r.IsValid(h) || r.remote.timerPending.Load() != 0 {
		t.Fatalf("after the drive: valid %v, cancel marks %d", r.IsValid(h), r.remote.timerPending.Load())
	}
}

// A local task is canceled by clearing its callbacks (invariant 5 of
// local.go), so Immediate(nil) must not read as canceled: it reaches the
// panic handler with the mistake's name, the tasks around it run, and a
// canceled Post never runs.
func TestLocalQueueNilImmediateAndCanceledPost(t *testing.T) {
	var panics []any
	r := newReactor(Options{CPU: -1, PanicHandler: func(v any) { panics = append(panics, v) }}, true)
	var got []int
	r.Immediate(func() {
		r.Immediate(func() { got = append(got, 1) })
		h := r.Immediate(nil)
		if !r.IsValid(h) {
			t.Error("Immediate(nil): handle not valid before it runs")
		}
		r.xPost(func(unsafe.Pointer, uint64) { got = append(got, 99) }, nil, 0)
		r.Cancel(Handle{pos: localBit | (r.local.tail - 1), kind: handleLocal})
		r.Immediate(func() { got = append(got, 2) })
	})
	r.RunUntilIdle()
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("ran %v, want [1 2]", got)
	}
	if len(panics) != 1 || panics[0] != "reactor: Immediate(nil)" {
		t.Fatalf("panics %v, want one naming Immediate(nil)", panics)
	}
}

// A Post with a nil callback is the caller's mistake, as Immediate(nil)
// is: queued locally (on the loop, or by a goroutine that takes an idle
// manual reactor) it must reach the panic handler with its name, not read
// as a canceled task and vanish while Post reports true; through the
// ring it reaches the handler too.
func TestLocalQueueNilPostReachesPanicHandler(t *testing.T) {
	var panics []any
	r := newReactor(Options{CPU: -1, PanicHandler: func(v any) { panics = append(panics, v) }}, true)
	ran := 0
	r.Immediate(func() {
		if !PostTo[int](r, nil, nil, 0) {
			t.Error("PostTo(nil) on the loop reported false")
		}
		r.Immediate(func() { ran++ })
	})
	r.RunUntilIdle()
	if !X.Post(r, nil, nil, 0) { // an idle manual reactor: queued locally by this goroutine
		t.Error("X.Post(nil) off the loop reported false")
	}
	r.RunUntilIdle()
	if ran != 1 {
		t.Fatalf("the task after the nil Post ran %d times, want 1", ran)
	}
	if len(panics) != 2 || panics[0] != "reactor: Post with a nil callback" || panics[1] != "reactor: Post with a nil callback" {
		t.Fatalf("panics %v, want two naming the nil Post", panics)
	}
}

// Immediate(nil) from a goroutine that finds the loop busy goes through
// the ring: it reaches the panic handler with the same name as on the
// loop, not as a nil call's runtime error.
func TestRingNilImmediateNamed(t *testing.T) {
	var panics []any
	r := newReactor(Options{CPU: -1, PanicHandler: func(v any) { panics = append(panics, v) }}, true)
	r.Immediate(func() {
		done := make(chan Handle)
		go func() { done <- r.Immediate(nil) }() // the loop is held: through the ring
		if h := <-done; h.kind != handleRemote {
			t.Errorf("Immediate(nil) off the loop: handle kind %d, want the ring's", h.kind)
		}
	})
	r.RunUntilIdle()
	if len(panics) != 1 || panics[0] != "reactor: Immediate(nil)" {
		t.Fatalf("panics %v, want one naming Immediate(nil)", panics)
	}
}

// Metrics.TimersFired counts the local tasks taken (the local queue's head
// counts them, LoopMetrics adds it), canceled ones included, as the
// per-task increment it replaced did, beside the wheel's timers.
func TestTimersFiredCountsLocalTasks(t *testing.T) {
	r := NewManual()
	var before, after Metrics
	ran := 0
	r.Immediate(func() {
		before = r.LoopMetrics()
		r.Immediate(func() { ran++ })
		h := r.Immediate(func() { ran += 100 })
		r.Cancel(h)
		r.xPost(func(unsafe.Pointer, uint64) { ran++ }, nil, 0)
		r.Deferred(0, func() { ran++ })
		r.RunUntilIdle()
		r.Advance(0)
		after = r.LoopMetrics()
	})
	r.RunUntilIdle()
	if ran != 3 {
		t.Fatalf("ran %d, want 3 (the canceled task must not run)", ran)
	}
	// The three local tasks (one canceled) and the wheel's timer.
	if got := after.TimersFired - before.TimersFired; got != 4 {
		t.Fatalf("TimersFired grew by %d, want 4", got)
	}
	// The outer Immediate was counted as it was taken, before it ran.
	if m := r.LoopMetrics(); m.TimersFired != after.TimersFired || before.TimersFired != 1 {
		t.Fatalf("TimersFired %d inside the first task and %d after the drive, want 1 and %d", before.TimersFired, m.TimersFired, after.TimersFired)
	}
}

// Immediate(nil) is stored as it is and named when it runs (invariant 5
// of local.go): canceled before it runs, it is gone like any canceled
// task (no panic, not valid); a canceled task is told from it by its
// marked arg, and IsValid sees the difference.
func TestLocalQueueCanceledNilImmediate(t *testing.T) {
	var panics []any
	r := newReactor(Options{CPU: -1, PanicHandler: func(v any) { panics = append(panics, v) }}, true)
	ran := 0
	r.Immediate(func() {
		h := r.Immediate(nil)
		live := r.Immediate(func() { ran++ })
		gone := r.Immediate(func() { ran += 100 })
		r.Cancel(h)
		r.Cancel(gone)
		if r.IsValid(h) || r.IsValid(gone) {
			t.Error("a canceled local task is still valid")
		}
		if !r.IsValid(live) {
			t.Error("a queued local task is not valid")
		}
		again := r.Immediate(nil)
		if !r.IsValid(again) {
			t.Error("Immediate(nil) not valid before it runs")
		}
	})
	r.RunUntilIdle()
	if ran != 1 {
		t.Fatalf("ran %d, want 1", ran)
	}
	if len(panics) != 1 || panics[0] != "reactor: Immediate(nil)" {
		t.Fatalf("panics %v, want one naming Immediate(nil)", panics)
	}
}
