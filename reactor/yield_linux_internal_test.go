//go:build linux

package reactor

import (
	"testing"
	"time"
)

// An unlocked loop that keeps going to sleep passes the Go scheduler
// before it blocks, at most once per yieldEvery, so that sysmon never
// takes it for a goroutine hogging its P (poll, yieldEvery); a locked
// loop never does (there a yield is a hand-off to another thread).
func TestUnlockedLoopYieldsBeforeSleep(t *testing.T) {
	for _, tc := range []struct {
		name     string
		unlocked bool
	}{
		{"unlocked", true},
		{"locked", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if forcePolling && tc.unlocked {
				// The asyncsteps_polling build's loop is gnet's Polling,
				// which yields itself each time a non-blocking wait finds
				// nothing (see poll): lastYield is the direct loop's alone.
				t.Skip("gnet's Polling yields at every wait; lastYield is the direct loop's")
			}
			r := startLoop(t, Options{CPU: -1, Unlocked: tc.unlocked})
			var seen []int64 // distinct lastYield values, read on the loop
			last := int64(0)
			deadline := time.Now().Add(20 * time.Second) // a hang guard, not a timing
			for i := 0; ; i++ {
				waitAsleep(r)
				onLoop(r, func() { last = r.os.lastYield })
				if last != 0 && (len(seen) == 0 || seen[len(seen)-1] != last) {
					seen = append(seen, last)
				}
				if !tc.unlocked && i >= 200 || tc.unlocked && len(seen) >= 3 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after %d sleeps the loop yielded %d times", i, len(seen))
				}
			}
			if !tc.unlocked {
				if len(seen) != 0 {
					t.Fatalf("a locked loop yielded (%d times)", len(seen))
				}
				return
			}
			for i := 1; i < len(seen); i++ {
				if d := time.Duration(seen[i] - seen[i-1]); d < yieldEvery {
					t.Errorf("yields %v apart, want at least %v", d, yieldEvery)
				}
			}
		})
	}
}
