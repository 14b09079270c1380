//go:build linux

package engine

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// cpuTimer reports a benchmark's CPU time per op on its locked OS thread
// (RUSAGE_THREAD) as cpu-ns/op, beside the wall-clock ns/op: on a shared
// 2-core machine the wall clock counts the time other processes took the
// core, which drowns differences of a few percent; the thread's CPU time
// does not. A manual reactor runs every flow on the benchmark's goroutine,
// so the thread's time is the whole cost.
type cpuTimer struct {
	b     *testing.B
	start time.Duration
}

func startCPUTimer(b *testing.B) *cpuTimer {
	runtime.LockOSThread()
	b.Cleanup(runtime.UnlockOSThread)
	return &cpuTimer{b: b, start: threadCPU()}
}

func (c *cpuTimer) stop() {
	d := threadCPU() - c.start
	c.b.ReportMetric(float64(d.Nanoseconds())/float64(c.b.N), "cpu-ns/op")
}

func threadCPU() time.Duration {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	_ = syscall.Getrusage(rusageThread, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
