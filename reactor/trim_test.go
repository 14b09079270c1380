package reactor_test

import (
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// After a burst of timers has fired, TrimTimers gives the
// wheel's extra node chunks back; off the loop it refuses with a panic.
func TestTrimTimersAfterBurst(t *testing.T) {
	r := reactor.NewManual()
	fired := 0
	cb := func(unsafe.Pointer, uint64) { fired++ }
	for i := 0; i < 5000; i++ {
		reactor.X.After(r, time.Millisecond, cb, nil, 0)
	}
	r.Advance(10 * time.Millisecond)
	if fired != 5000 {
		t.Fatalf("%d of 5000 timers fired", fired)
	}
	dropped := -1
	r.Immediate(func() { dropped = r.TrimTimers() })
	r.RunUntilIdle()
	if dropped <= 0 {
		t.Fatalf("TrimTimers dropped %d bytes after 5000 timers fired", dropped)
	}
	reactor.
		// The wheel still works after it.
		X.After(r, time.Millisecond, cb, nil, 0)
	r.Advance(10 * time.Millisecond)
	if fired != 5001 {
		t.Fatal("a timer added after TrimTimers did not fire")
	}
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "TrimTimers off the loop") {
			t.Fatalf("panic %q, want TrimTimers off the loop", msg)
		}
	}()
	r.TrimTimers()
}
