// Package reactortest runs real reactors for tests, as net/http/httptest
// runs servers: Start makes one, runs its loop on a goroutine of its own
// and closes it when the test ends, checking that Close and Run return
// nil. The helpers around it wait on the loop with a deadline instead of
// sleeping.
package reactortest

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// Hang is how long a helper waits for the loop before it calls the test
// stuck (a deadlock or a lost wake-up): far beyond any healthy wait, even
// under the race detector on two shared cores.
const Hang = 15 * time.Second

// Start makes a real reactor with opts, lets setup configure it before its
// loop starts (SetPanicHandler, for instance), and runs the loop on its own
// goroutine. When the test ends the reactor is closed and Close and Run
// must both return nil within Hang.
func Start(tb testing.TB, opts reactor.Options, setup ...func(r *reactor.Reactor)) *reactor.Reactor {
	tb.Helper()
	r, ran := start(tb, opts, setup)
	tb.Cleanup(func() {
		if err := r.Close(); err != nil {
			tb.Errorf("reactortest: Close: %v", err)
		}
		select {
		case err := <-ran:
			if err != nil {
				tb.Errorf("reactortest: Run: %v", err)
			}
		case <-time.After(Hang):
			tb.Error("reactortest: Run did not return after Close")
		}
	})
	return r
}

// StartRun is Start for tests of Run and Close themselves: the channel
// yields Run's result, which the test checks (CloseAndWait does). The
// cleanup only closes the reactor.
func StartRun(tb testing.TB, opts reactor.Options, setup ...func(r *reactor.Reactor)) (*reactor.Reactor, <-chan error) {
	tb.Helper()
	r, ran := start(tb, opts, setup)
	tb.Cleanup(func() { _ = r.Close() })
	return r, ran
}

func start(tb testing.TB, opts reactor.Options, setup []func(r *reactor.Reactor)) (*reactor.Reactor, chan error) {
	tb.Helper()
	r, err := reactor.New(opts)
	if err != nil {
		tb.Fatalf("reactortest: reactor.New(%+v): %v", opts, err)
	}
	for _, f := range setup {
		f(r)
	}
	ran := make(chan error, 1)
	go func() { ran <- r.Run() }()
	return r, ran
}

// CloseAndWait closes r and checks that Close, then Run (whose result ran
// yields), return nil, Run within Hang.
func CloseAndWait(tb testing.TB, r *reactor.Reactor, ran <-chan error) {
	tb.Helper()
	if err := r.Close(); err != nil {
		tb.Fatalf("Close: %v", err)
	}
	select {
	case err := <-ran:
		if err != nil {
			tb.Fatalf("Run returned %v after Close, want nil", err)
		}
	case <-time.After(Hang):
		tb.Fatal("Run did not return after Close returned")
	}
}

// OnLoop runs fn on r's loop and waits for it to return.
func OnLoop(tb testing.TB, r *reactor.Reactor, fn func()) {
	tb.Helper()
	done := make(chan struct{})
	if h := r.Immediate(func() { defer close(done); fn() }); h.IsZero() {
		tb.Fatal("Immediate returned the zero Handle on an open reactor")
	}
	Wait(tb, done, "callback on the loop")
}

// Sync waits until r's loop has run everything this goroutine submitted
// before the call: callbacks posted from one goroutine run in order.
func Sync(tb testing.TB, r *reactor.Reactor) {
	tb.Helper()
	OnLoop(tb, r, func() {})
}

// Wait waits for ch to be closed (or to yield), failing the test after Hang
// with what it was waiting for.
func Wait(tb testing.TB, ch <-chan struct{}, what string) {
	tb.Helper()
	select {
	case <-ch:
	case <-time.After(Hang):
		tb.Fatalf("timed out waiting for %s (deadlock or lost wake-up?)", what)
	}
}
