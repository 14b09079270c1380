package engine

import (
	"runtime"
	"sync/atomic"

	"github.com/asyncsteps/asyncsteps/internal/storerel"
)

// spinLock guards the engine's shared root pool (rootMu): a few loads and
// stores per critical section (a pop, a push, a count, a run of frames
// cut from a list), taken by New and Release from any goroutine. Its
// Unlock is a release-only store where sync.Mutex's is a locked add: an
// off-loop Simple takes the pool twice, so that is two locked instructions
// (~8 ns) of a ~90 ns flow (profiles/notes/README.md, Hsimple). A waiter yields
// to the scheduler rather than parking: the holder never blocks inside,
// so the wait is the rest of a short section, or the holder's next time
// slice if it was preempted there.
type spinLock struct {
	w atomic.Uintptr // 1 while held
}

// Lock takes the lock, yielding while another goroutine holds it.
func (l *spinLock) Lock() {
	if !l.w.CompareAndSwap(0, 1) {
		l.lockSlow()
	}
}

// lockSlow is Lock's contended path, out of line so that Lock inlines.
//
//go:noinline
func (l *spinLock) lockSlow() {
	for !l.w.CompareAndSwap(0, 1) {
		runtime.Gosched()
	}
}

// Unlock gives the lock up: a release store (see internal/storerel),
// enough for the next Lock's CompareAndSwap to see the section's writes.
func (l *spinLock) Unlock() { storerel.Uintptr(&l.w, 0) }
