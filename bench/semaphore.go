package bench

import (
	"context"
	"testing"

	"golang.org/x/sync/semaphore"
)

// This file is the golang.org/x/sync/semaphore peer of the sync scenarios
// (impl=semaphore): a weighted semaphore of capacity 1 is the library's
// lock for goroutines that may wait with a context. Its waiters queue FIFO,
// like ours; a waiter is a list element and a channel, allocated per wait.

// MutexContendedSemaphore: SyncWorkers goroutines take turns in one
// semaphore.NewWeighted(1): Acquire(ctx, 1), the section, Release(1). b.N
// counts entries.
func MutexContendedSemaphore(b *testing.B) {
	runWorkers(b, "MutexContendedSemaphore", true, 0, 0, semaphoreStep())
}

// semaphoreStep is one worker's step: Acquire, the section, Release.
func semaphoreStep() func(w *syncWork, i int) {
	sem := semaphore.NewWeighted(1)
	ctx := context.Background()
	return func(w *syncWork, i int) {
		if err := sem.Acquire(ctx, 1); err != nil {
			panic(err) // a background context is never done
		}
		w.enter(i)
		sem.Release(1)
	}
}
