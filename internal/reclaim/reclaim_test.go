package reclaim

import (
	"testing"
	"time"
)

// A burst's worth of dropped bytes gets one collection; less gets none.
func TestDroppedCollectsOnceAtThreshold(t *testing.T) {
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
