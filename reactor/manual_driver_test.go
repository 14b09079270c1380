package reactor_test

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A goroutine that only asks about or cancels a manual reactor's timer
// (IsValid, Cancel: they take the loop for a moment, as the loop-owned
// wheel needs) does not drive it, and must not become its driver: the
// driver is the goroutine IsLoopGoroutine names (the last Iterate,
// RunUntilIdle or Advance), whose Promise.Wait on an unfinished flow panics
// instead of blocking for ever, whose engine.ReadMetrics reads at once
// instead of posting a request only it could run, and the only one that
// may start a flow in an idle reactor (X.TakeIdle).
func TestTimerCallsOffLoopKeepTheDriver(t *testing.T) {
	r := reactor.NewManual()
	defer r.Close()
	var timer, local reactor.Handle
	r.Immediate(func() {
		timer = r.Deferred(time.Hour, func() {})
		local = r.Immediate(func() {})
	})
	r.Iterate() // this goroutine drives; local stays queued for the next iteration
	if !r.IsLoopGoroutine() {
		t.Fatal("the goroutine that drove is not the loop's goroutine")
	}
	other := make(chan bool)
	go func() {
		if !r.IsValid(timer) || !r.IsValid(local) {
			t.Error("IsValid: a pending timer or queued task reads invalid")
		}
		r.Cancel(timer)
		r.Cancel(local)
		other <- r.IsLoopGoroutine()
	}()
	if <-other {
		t.Fatal("a goroutine that only asked about and canceled tasks became the loop's goroutine")
	}
	if !r.IsLoopGoroutine() {
		t.Fatal("the driver lost its role to a goroutine that only asked about and canceled tasks")
	}
	if r.IsValid(timer) || r.IsValid(local) {
		t.Fatal("canceled tasks read valid")
	}
}
