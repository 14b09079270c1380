package engine_test

import "testing"

// Flows started from goroutines that wait for them with Promise.Wait, on a
// group whose loops park between calls: Wait may run a flow's turn itself
// (reactor.Assist). Whoever runs a step, it runs as the loop, Wait inside
// it is still refused, a timer it arms fires, and many goroutines calling
// at once each get their own flow's result.
func TestPromiseWaitAssistKeepsTheContract(t *testing.T) {
	_, assisted := callsAsTheLoop(t, true)
	if assisted == 0 && !pollingFallback {
		t.Fatal("no step ran on its waiting goroutine: Wait never assisted")
	}
	t.Logf("%d of %d first steps ran on their waiter", assisted, 200+800)
}
