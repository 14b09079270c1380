package reclaim

import (
	"testing"
	"time"
)

// fresh waits for an earlier test's collection to end and forgets the
// back-off it left: the collections' history is the process's, and a test
// run again (-count) or after another would otherwise wait out back-offs
// of up to MaxInterval that its deadlines do not allow for.
func fresh() {
	for running.Load() {
		time.Sleep(50 * time.Millisecond)
	}
	// No collection runs (running is false, read after its last write):
	// these are ours to reset.
	lastEnd, backoff = time.Time{}, 0
	dropped.Store(0)
}

// A burst's worth of dropped bytes gets one collection; less gets none.
func TestDroppedCollectsOnceAtThreshold(t *testing.T) {
	fresh()
	r0 := Runs()
	Dropped(Threshold / 2)
	Dropped(-1) // ignored
	time.Sleep(Settle + 500*time.Millisecond)
	if Runs() != r0 {
		t.Fatalf("%d collections for half the threshold", Runs()-r0)
	}
	for i := 0; i < 10; i++ {
		Dropped(Threshold / 2) // one collection for all of them: it is waiting
	}
	deadline := time.Now().Add(10 * time.Second)
	for Runs() == r0 {
		if time.Now().After(deadline) {
			t.Fatal("no collection after the threshold was dropped")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(Settle + 500*time.Millisecond)
	if n := Runs() - r0; n != 1 {
		t.Fatalf("%d collections, want 1", n)
	}
}

// A load that comes and goes drops a burst's worth at every lull: the
// collections it gets back off (Settle, 3 s, 6 s apart ...), not one per
// Settle (before: 4 in 6 s).
func TestDroppedSteadilyBacksOff(t *testing.T) {
	fresh()
	r0 := Runs()
	start := time.Now()
	for time.Since(start) < 6*time.Second {
		Dropped(2 * Threshold)
		time.Sleep(100 * time.Millisecond)
	}
	// Within 6 s of steady drops: at most 1.5 s, then 3 s after it (or,
	// after an earlier test's run, 3 s and 6 s): two collections at most.
	if n := Runs() - r0; n == 0 || n > 2 {
		t.Fatalf("%d collections in %v of steady drops, want 1 or 2", n, time.Since(start).Round(time.Millisecond))
	}
	for running.Load() {
		time.Sleep(50 * time.Millisecond) // leave no collection to the next test
	}
}

// Turned off, a drop starts nothing, and a collection already waiting
// collects nothing.
func TestSetEnabledOff(t *testing.T) {
	fresh()
	defer SetEnabled(true)
	r0 := Runs()
	SetEnabled(false)
	Dropped(4 * Threshold)
	if running.Load() || dropped.Load() != 0 {
		t.Fatalf("turned off, a drop started a collection (running %v) or counted (%d bytes)", running.Load(), dropped.Load())
	}

	SetEnabled(true)
	Dropped(2 * Threshold) // a collection starts and waits out Settle
	if !running.Load() {
		t.Fatal("no collection started for twice the threshold")
	}
	SetEnabled(false)
	for running.Load() {
		time.Sleep(50 * time.Millisecond)
	}
	if n := Runs() - r0; n != 0 {
		t.Fatalf("%d collections after SetEnabled(false), want 0", n)
	}
	// Nothing was collected, so nothing backs off: the next collection
	// starts the back-off anew, as after a quiet spell.
	if !lastEnd.IsZero() || backoff != 0 {
		t.Fatalf("a collection turned off set lastEnd %v, backoff %v; want them untouched", lastEnd, backoff)
	}
}
