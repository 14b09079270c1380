//go:build linux

package reactor

import (
	"sync/atomic"
	"testing"
	"unsafe"
)

// A loop borrowing a parked reactor's word (the kept hand-off: the
// reactor's sleeping flag left set, its turn owed by the borrowing loop,
// oweKept) while that reactor closes: each task accepted runs exactly
// once, never two at once, and Run returns nil. The owed turn then finds
// the reactor closed or its loop gone, and must neither run a task twice
// nor write a closed eventfd (kickNow skips it once fdsClosing is set).
func TestKeptHandOffRacingClose(t *testing.T) {
	if forcePolling {
		t.Skip("the Polling fallback never parks: nothing to hand off")
	}
	a := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	var kept atomic.Int64 // hand-offs that took the kept path
	racingClose(t, Options{CPU: -1, Spin: NoSpin}, func(r *Reactor, task func(unsafe.Pointer, uint64)) bool {
		res := make(chan bool, 1)
		if !a.xPost(func(unsafe.Pointer, uint64) {
			if !X.TakeParked(r) {
				res <- false
				return
			}
			ok := r.postLocal(task, nil, 0)
			X.GiveParked(r, ok)
			// a's loop-owned list, read on a's loop: the turn owed is
			// the last entry, kept if the flag was left set.
			if n := len(a.owed); n > 0 && a.owed[n-1].r == r && a.owed[n-1].kept {
				kept.Add(1)
			}
			res <- ok
		}, nil, 0) {
			return false
		}
		return <-res
	})
	if kept.Load() == 0 {
		t.Fatal("no hand-off took the kept path: the test checked nothing")
	}
}
