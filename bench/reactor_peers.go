package bench

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// This file is the Go peers of ReactorScenarios: a goroutine per flow, a
// channel to a goroutine locked to its OS thread (what a reactor's loop
// is), and the runtime's timers.

// RealSimpleGoroutines: go f() and a receive of its signal, one at a
// time: RealSimple's peer. Reports the p50 and p99 of the whole op.
func RealSimpleGoroutines(b *testing.B) {
	done := make(chan struct{}, 1)
	f := func() { done <- struct{}{} }
	for range warmRounds {
		go f()
		<-done
	}
	lat := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range lat {
		t0 := time.Now()
		go f()
		<-done
		lat[i] = time.Since(t0)
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// item is what SubmitChan carries: the same triple reactor.Post takes.
type item struct {
	cb  func(unsafe.Pointer, uint64)
	arg unsafe.Pointer
	aux uint64
}

// lockedConsumer runs every item of ch on a goroutine locked to its
// thread, until ch is closed; stopped is closed after the last.
func lockedConsumer(ch <-chan item) (stopped <-chan struct{}) {
	s := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for it := range ch {
			it.cb(it.arg, it.aux)
		}
		close(s)
	}()
	return s
}

// SubmitChan: Submit's peer, b.N items sent on a channel as deep as the
// reactor's ring to a consumer goroutine locked to its thread.
func SubmitChan(b *testing.B) {
	ch := make(chan item, reactor.DefaultRingSize)
	stopped := lockedConsumer(ch)
	defer func() { close(ch); <-stopped }()
	c := new(counter)
	arg := unsafe.Pointer(c)
	for range 1024 {
		ch <- item{countCb, arg, 0}
	}
	waitCount(b, "SubmitChan", c, 1024)
	c.n.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		ch <- item{countCb, arg, 0}
	}
	waitCount(b, "SubmitChan", c, int64(b.N))
}

// WakeupChan: Wakeup's peer, a send to a parked consumer goroutine locked
// to its thread (the runtime's hand-off to a locked thread included).
func WakeupChan(b *testing.B) {
	ch := make(chan item, 1)
	stopped := lockedConsumer(ch)
	defer func() { close(ch); <-stopped }()
	p := &wakeProbe{base: time.Now(), ch: make(chan struct{}, 1)}
	arg := unsafe.Pointer(p)
	runWakeup(b, p, func() { ch <- item{wakeCb, arg, 0} })
}

// TimerLatenessAfterFunc: TimerLateness's peer, time.AfterFunc (no tick;
// the callback runs on a goroutine of its own).
func TimerLatenessAfterFunc(b *testing.B) {
	runLateness(b, "TimerLatenessAfterFunc", func(d time.Duration, fn func()) { time.AfterFunc(d, fn) })
}

// TimerAddCancelAfterFunc: TimerAddCancel's peer, time.AfterFunc and Stop.
func TimerAddCancelAfterFunc(b *testing.B) {
	f := func() {}
	b.ReportAllocs()
	for b.Loop() {
		t := time.AfterFunc(time.Second, f)
		t.Stop()
	}
}
