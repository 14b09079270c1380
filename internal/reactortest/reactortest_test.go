package reactortest

import (
	"sync/atomic"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

func TestStartRunsTheLoopAndSetupFirst(t *testing.T) {
	var setupRan atomic.Bool
	r := Start(t, reactor.Options{CPU: -1}, func(r *reactor.Reactor) {
		setupRan.Store(true)
		r.SetPanicHandler(func(any) {})
	})
	if !setupRan.Load() {
		t.Fatal("setup did not run before Start returned")
	}
	onLoop := false
	OnLoop(t, r, func() { onLoop = r.IsSameThread() })
	if !onLoop {
		t.Fatal("OnLoop's callback did not run on the loop")
	}
}

func TestStartRunAndCloseAndWait(t *testing.T) {
	r, ran := StartRun(t, reactor.Options{CPU: -1})
	order := make(chan int, 2)
	r.Immediate(func() { order <- 1 })
	Sync(t, r)
	order <- 2
	if a, b := <-order, <-order; a != 1 || b != 2 {
		t.Fatalf("Sync returned before the earlier callback ran: order %d, %d", a, b)
	}
	CloseAndWait(t, r, ran)
	if !r.Closed() {
		t.Fatal("CloseAndWait left the reactor open")
	}
}
