//go:build linux

package engine_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A Promise from ordinary code on a parked real loop runs the loop's turn
// on the caller (PostRun's direct turn); when the flow it starts arms a
// timer (SetTimeout) and waits, the turn must arm the timerfd for it
// before it gives the word back, or the flow waits for the next unrelated
// wake-up. Each round's flow must end with Timeout; the 10 s guard only
// turns a hang into a failure.
func TestReviewSFRound7DirectTurnFlowArmsTimer(t *testing.T) {
	if pollingFallback {
		t.Skip("the Polling fallback never parks: Execute never runs a turn")
	}
	r, err := reactor.New(reactor.Options{CPU: -1, Spin: reactor.NoSpin})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- r.Run() }()
	defer func() {
		_ = r.Close()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}()
	for round := 0; round < 20; round++ {
		root := engine.New(r)
		done := make(chan string, 1)
		root.Add(func(as *engine.Steps) {
			as.SetTimeout(time.Millisecond)
			as.WaitExternal()
		}, func(as *engine.Steps, code string) {
			done <- code
			as.Success()
		})
		for deadline := time.Now().Add(10 * time.Second); !reactor.X.Parked(r); {
			if time.Now().After(deadline) {
				t.Fatal("the loop never parked")
			}
			runtime.Gosched()
		}
		// Execute, not Promise().Wait(): a waiter that assists the loop
		// would run a full turn of its own and arm the timer for it.
		root.Execute()
		select {
		case code := <-done:
			if code != engine.Timeout {
				t.Fatalf("round %d: %s, want Timeout", round, code)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the flow's 1 ms timeout never fired", round)
		}
	}
}
