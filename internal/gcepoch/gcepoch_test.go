package gcepoch

import (
	"runtime"
	"testing"
	"time"
)

func TestEpochAdvancesWithGC(t *testing.T) {
	e0 := Epoch()
	deadline := time.Now().Add(5 * time.Second)
	for Epoch() == e0 {
		if time.Now().After(deadline) {
			t.Fatal("the epoch did not move after GCs")
		}
		runtime.GC()
		runtime.Gosched()
	}
}
