package reactor

import (
	"reflect"
	"testing"
	"time"
)

// A Deferred from another goroutine counts its deadline from its call. One
// that lands in the ring after the loop's drain of the ring, but before
// the loop's look at the clock, may be due before a timer of the wheel
// that the same look finds due: it must still fire first (timers fire in
// deadline order, doc.go). Under load the loop's thread is descheduled
// between the two for milliseconds (TestRealDeferredOffLoopFireInDeadline
// OrderNeverEarly failed so in 2 of 12 runs, -race, load 30). Here the
// drain stops at its bound (maxInboxBatch) with the Deferred behind it,
// and the last task moves the manual clock on, as the descheduled thread's
// clock moved.
func TestDeferredPostedBeforeTheClockReadFiresInDeadlineOrder(t *testing.T) {
	r := NewManual()
	var got []string
	r.Immediate(func() {
		r.Deferred(5*time.Millisecond, func() { got = append(got, "wheel 5ms") })
	})
	r.RunUntilIdle()
	last := func() {
		// Behind the drain's bound: scheduled at virtual 0, due at 1ms,
		// 4 ms before the wheel's timer.
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.Deferred(time.Millisecond, func() { got = append(got, "posted 1ms") })
		}()
		<-done
		r.virtual.Store(int64(10 * time.Millisecond)) // the clock moves on before the loop reads it
	}
	r.Immediate(func() {
		// From another goroutine while the loop is held: through the ring.
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range maxInboxBatch - 1 {
				r.Immediate(func() {})
			}
			r.Immediate(last)
		}()
		<-done
	})
	r.RunUntilIdle()
	if want := []string{"posted 1ms", "wheel 5ms"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("fired %q, want %q (deadline order)", got, want)
	}
}
