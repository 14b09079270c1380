// Package leakcheck lets a test assert that it leaves no open file
// descriptor and no goroutine behind: the servers and reactors under test
// own both, and a leak of either is a bug. Linux only in effect: it counts
// /proc/self/fd, and skips where that cannot be read.
package leakcheck

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// FDs returns the number of descriptors the process has open now.
func FDs(t testing.TB) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(es)
}

// Until polls cond every 2ms and fails the test if it is still false after
// 5s: for what settles asynchronously (a loop closing a descriptor).
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Check records the open descriptors and goroutines now; at cleanup (after
// every cleanup registered later, which shut things down) it waits until
// both are back to at most those counts.
func Check(t testing.TB) {
	t.Helper()
	fds, gs := FDs(t), runtime.NumGoroutine()
	t.Cleanup(func() {
		Until(t, "descriptors and goroutines released", func() bool {
			return FDs(t) <= fds && runtime.NumGoroutine() <= gs
		})
	})
}
