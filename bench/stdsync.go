package bench

import (
	"sync"
	"testing"
)

// This file is the standard library's peer of the sync scenarios
// (impl=syncMutex): sync.Mutex, the baseline of every Go lock. It spins
// briefly, then parks; it is not FIFO (a running goroutine may barge in
// ahead of a parked one) until a waiter has starved for 1ms.

// MutexContendedSyncMutex: SyncWorkers goroutines take turns in one
// sync.Mutex: Lock, the section, Unlock. b.N counts entries.
func MutexContendedSyncMutex(b *testing.B) {
	runWorkers(b, "MutexContendedSyncMutex", true, 0, 0, syncMutexStep())
}

// syncMutexStep is one worker's step: Lock, the section, Unlock.
func syncMutexStep() func(w *syncWork, i int) {
	var mu sync.Mutex
	return func(w *syncWork, i int) {
		mu.Lock()
		w.enter(i)
		mu.Unlock()
	}
}
