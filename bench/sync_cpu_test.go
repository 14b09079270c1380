//go:build unix

package bench

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
	"github.com/asyncsteps/asyncsteps/syncprim"
)

// CPU time per contended section: MutexContended's fixture and
// its channel peer, with the process's CPU time (utime+stime, getrusage)
// over the timed round reported per op as cpu-ns/op, beside the fairness
// (max/min entries per flow) and the loops' wake-ups per op. On a shared
// machine the wall time says how much CPU the box gave the run; the CPU
// per section is the cost, and two builds are compared by alternating
// them (profiles/notes/2026-11-27-mutex-round4.md). Not in benchtable's
// registry: go test -bench 'CPU' only.

// processCPU is the process's CPU time so far.
func processCPU() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// roundCPU warms round up, then times a round of b.N entries and reports
// the process's CPU time per entry and w's fairness.
func roundCPU(b *testing.B, w *syncWork, round func(n int)) {
	round(syncWarm)
	settle(round)
	c0 := processCPU()
	b.ResetTimer()
	round(b.N)
	b.StopTimer()
	c1 := processCPU()
	b.ReportMetric(float64(c1-c0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(w.fairness(), MetricFairness)
}

// mutexContendedCPU is MutexContended on reactors with Options.Spin =
// spin, over reactors real reactors (8 flows: with 8 reactors each has
// its own, and every hand-over goes to another reactor).
func mutexContendedCPU(b *testing.B, spin time.Duration, reactors int) {
	old := CPUs
	CPUs = reactors
	defer func() { CPUs = old }()
	w := &syncWork{exclusive: true}
	f, err := newSyncFlows(w, spin, func(*reactor.Reactor) engine.Sync { return syncprim.NewMutex(1, 0) })
	if err != nil {
		b.Skipf("no real reactor here: %v", err)
	}
	roundCPU(b, w, f.round)
	rs := f.g.Reactors()
	if err := f.close(); err != nil {
		b.Fatal(err)
	}
	var wakeups uint64
	for _, r := range rs {
		wakeups += r.LoopMetrics().Wakeups // the loops have ended: no race
	}
	b.ReportMetric(float64(wakeups)/float64(b.N), "wakeups/op")
}

func BenchmarkMutexContendedCPU(b *testing.B)       { mutexContendedCPU(b, 0, CPUs) }
func BenchmarkMutexContendedNoSpinCPU(b *testing.B) { mutexContendedCPU(b, reactor.NoSpin, CPUs) }
func BenchmarkMutexContendedSpinCPU(b *testing.B)   { mutexContendedCPU(b, HandoverSpin, CPUs) }

// BenchmarkMutexContended8CPU: the 8 flows on 8 reactors (pinned to CPUs
// i mod NumCPU): every hand-over crosses reactors, as with 16 cores.
func BenchmarkMutexContended8CPU(b *testing.B) { mutexContendedCPU(b, 0, 8) }

// BenchmarkChanSemCPU is MutexContended's 1-slot channel peer, measured
// the same way.
func BenchmarkChanSemCPU(b *testing.B) {
	sem := make(chan struct{}, 1)
	w := &syncWork{exclusive: true}
	ws := startWorkers(w, func(i int) {
		sem <- struct{}{}
		w.enter(i)
		<-sem
	})
	defer ws.stop()
	roundCPU(b, w, ws.round)
}
