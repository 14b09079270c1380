package reactor

import (
	"sync"
	"testing"
	"time"
	"unsafe"
)

func TestManualImmediateOrder(t *testing.T) {
	r := NewManual()
	var got []int
	for i := 0; i < 5; i++ {
		r.Immediate(func() { got = append(got, i) }) // off the loop: through the ring
	}
	r.Immediate(func() {
		for i := 5; i < 10; i++ {
			r.Immediate(func() { got = append(got, i) }) // on the loop: through the wheel
		}
	})
	r.RunUntilIdle()
	for i, v := range got {
		if v != i {
			t.Fatalf("order = %v", got)
		}
	}
	if len(got) != 10 {
		t.Fatalf("ran %d callbacks, want 10", len(got))
	}
}

func TestManualDeferredNeverEarlyAtMostOneTickLate(t *testing.T) {
	cases := []struct {
		delay      time.Duration
		firesAfter time.Duration // first multiple of the 1ms tick at or after delay
	}{
		{0, 0},
		{time.Millisecond, time.Millisecond},
		{1500 * time.Microsecond, 2 * time.Millisecond},
		{time.Second, time.Second},
		{90 * time.Minute, 90 * time.Minute},
	}
	for _, c := range cases {
		r := NewManual()
		fired := false
		r.Deferred(c.delay, func() { fired = true })
		if c.firesAfter > 0 {
			r.Advance(c.firesAfter - time.Microsecond)
			if fired {
				t.Fatalf("Deferred(%v) fired before %v", c.delay, c.firesAfter)
			}
			r.Advance(time.Microsecond)
		} else {
			r.RunUntilIdle()
		}
		if !fired {
			t.Fatalf("Deferred(%v) not fired at %v", c.delay, c.firesAfter)
		}
	}
}

func TestManualAdvanceFiresInDeadlineOrderIncludingNewTimers(t *testing.T) {
	r := NewManual()
	var got []string
	var at []time.Duration
	start := r.Now()
	note := func(s string) { got = append(got, s); at = append(at, r.Now().Sub(start)) }
	r.Deferred(30*time.Millisecond, func() { note("c") })
	r.Deferred(10*time.Millisecond, func() {
		note("a")
		r.Deferred(10*time.Millisecond, func() { note("b") }) // due at 20ms, inside the advance
	})
	r.Advance(time.Second)
	want := []string{"a", "b", "c"}
	wantAt := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond}
	for i := range want {
		if i >= len(got) || got[i] != want[i] || at[i] != wantAt[i] {
			t.Fatalf("fired %v at %v, want %v at %v", got, at, want, wantAt)
		}
	}
	if d := r.Now().Sub(start); d != time.Second {
		t.Fatalf("clock after Advance(1s) = %v", d)
	}
}

func TestManualCancelAndIsValid(t *testing.T) {
	r := NewManual()
	if r.IsValid(Handle{}) {
		t.Fatal("zero Handle is valid")
	}
	ran := false
	h := r.Immediate(func() { ran = true }) // remote handle: not yet taken by the loop
	if !r.IsValid(h) {
		t.Fatal("pending remote task not valid")
	}
	r.Cancel(h)
	if r.IsValid(h) {
		t.Fatal("canceled remote task still valid")
	}
	r.RunUntilIdle()
	if ran {
		t.Fatal("canceled task ran")
	}
	d := r.Deferred(time.Millisecond, func() { ran = true })
	r.RunUntilIdle() // the loop takes the remote Deferred and puts it in the wheel
	if !r.IsValid(d) {
		t.Fatal("pending remote Deferred not valid")
	}
	r.Cancel(d)
	r.Advance(time.Second)
	if ran || r.IsValid(d) {
		t.Fatalf("canceled Deferred ran=%v valid=%v", ran, r.IsValid(d))
	}
}

// More posts than the ring holds, from several goroutines, with nobody
// driving: nothing blocks, nothing is lost, each producer's order holds.
func TestManualOverflowKeepsPerProducerOrder(t *testing.T) {
	r := newReactor(Options{RingSize: 64}, true)
	const producers, per = 4, 1000
	got := make([][]int, producers)
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				r.Immediate(func() { got[p] = append(got[p], i) })
			}
		}()
	}
	wg.Wait()
	r.RunUntilIdle()
	for p := range got {
		if len(got[p]) != per {
			t.Fatalf("producer %d: %d of %d tasks ran", p, len(got[p]), per)
		}
		for i, v := range got[p] {
			if v != i {
				t.Fatalf("producer %d: task %d ran at position %d", p, v, i)
			}
		}
	}
}

func TestManualPanicIsContained(t *testing.T) {
	r := NewManual()
	var reported any
	r.SetPanicHandler(func(v any) { reported = v })
	after := false
	r.Immediate(func() { panic("boom") })
	r.Immediate(func() { after = true })
	r.RunUntilIdle()
	if reported != "boom" || !after {
		t.Fatalf("reported=%v, later task ran=%v", reported, after)
	}
}

func TestManualIsSameThread(t *testing.T) {
	r := NewManual()
	if r.IsSameThread() {
		t.Fatal("IsSameThread outside a drive")
	}
	inside := false
	r.Immediate(func() { inside = r.IsSameThread() })
	r.RunUntilIdle()
	if !inside {
		t.Fatal("IsSameThread false inside a callback")
	}
	var other bool
	done := make(chan struct{})
	r.Immediate(func() {
		go func() { other = r.IsSameThread(); close(done) }()
		<-done
	})
	r.RunUntilIdle()
	if other {
		t.Fatal("IsSameThread true on another goroutine during a drive")
	}
}

func TestManualCloseRejectsNewWork(t *testing.T) {
	r := NewManual()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if h := r.Immediate(func() {}); !h.IsZero() {
		t.Fatal("Immediate after Close returned a handle")
	}
	if r.xPost(func(unsafe.Pointer, uint64) {}, nil, 0) {
		t.Fatal("Post after Close reported success")
	}
	if err := r.Run(); err != ErrManual {
		t.Fatalf("Run on a manual reactor = %v", err)
	}
}

// A panic that escapes a nested RunUntilIdle (a PanicHandler that panics
// itself) must not leave the loop taken: the outermost drive gives it up,
// and another goroutine can drive the reactor afterwards.
func TestManualNestedDrivePanicReleasesLoop(t *testing.T) {
	r := NewManual()
	r.SetPanicHandler(func(v any) { panic(v) })
	r.Immediate(func() {
		r.Immediate(func() { panic("inner") })
		r.RunUntilIdle() // nested: the inner panic escapes through it
	})
	func() {
		defer func() {
			if v := recover(); v != "inner" {
				t.Errorf("recovered %v, want inner", v)
			}
		}()
		r.RunUntilIdle()
	}()
	if r.IsSameThread() {
		t.Fatal("the loop is still taken by the goroutine whose drive panicked")
	}
	ran := make(chan bool, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Immediate(func() { ran <- r.IsSameThread() })
		r.RunUntilIdle()
	}()
	<-done
	if !<-ran {
		t.Fatal("another goroutine's drive did not run its task on the loop")
	}
}
