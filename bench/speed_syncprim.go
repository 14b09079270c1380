package bench

import (
	"sync"
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// --- MutexSection: an uncontended syncprim.Mutex section ---
//
// Simple with its one step inside as.Sync(mutex, step): the difference from
// Simple's row under the same driver is the price of entering and leaving
// an uncontended Mutex (the target: at most 30 ns over a plain step on a
// quiet machine, no allocation;
// profiles/notes/2026-11-25-uncontended-mutex-section.md).

func newMutexSection() *simpleFixture {
	s := newSimple()
	m := syncprim.NewMutex(1, 0)
	inner := s.step
	s.step = func(as *engine.Steps) { as.Sync(m, inner, nil) }
	return s
}

// MutexSection: Simple's flow with its step inside an uncontended Mutex,
// from the benchmark goroutine (driver=goroutine). b.N counts flows.
func MutexSection(b *testing.B) {
	s := newMutexSection()
	runDriven(b, "MutexSection", s.r, DriverGoroutine, func() error { return s.bench(b) })
}

// MutexSectionOnLoop: MutexSection inside a loop callback (driver=loop).
func MutexSectionOnLoop(b *testing.B) {
	s := newMutexSection()
	runDriven(b, "MutexSection", s.r, DriverLoop, func() error { return s.bench(b) })
}

// MutexSectionGoroutines: Simple's goroutine per op, its work inside an
// uncontended sync.Mutex.
func MutexSectionGoroutines(b *testing.B) {
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		ran int64
	)
	op := func() {
		wg.Add(1)
		go func() {
			mu.Lock()
			ran++
			mu.Unlock()
			wg.Done()
		}()
		wg.Wait()
	}
	for range warmRounds {
		op()
	}
	ran = 0
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		op()
	}
	b.StopTimer()
	if ran != int64(b.N) {
		fatalf(b, "MutexSectionGoroutines: %d of %d sections ran", ran, b.N)
	}
}
