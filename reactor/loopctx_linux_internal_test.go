//go:build linux

package reactor

import (
	"testing"
	"time"
	"unsafe"
)

// A parked real loop's work run by a waiter without an iteration (RunParked
// with a task that leaves nothing: no turn follows it) must not leave a
// Loop made there held for that waiter's next hold of the word: used by
// another goroutine during the waiter's next RunParked, it takes the
// checked path (Reactor.Immediate: through the ring), not the local queue
// that the waiter owns then. The use is made while the waiter waits in its
// second task, so the outcome does not depend on timing.
func TestLoopKeptPastARunParkedTask(t *testing.T) {
	r := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	var kept Loop
	waitParked(t, r)
	if !X.RunParked(r, func(unsafe.Pointer, uint64) { kept, _ = r.Loop() }, nil, 0) {
		t.Fatal("RunParked declined a parked, open reactor with nothing queued")
	}
	if kept == (Loop{}) {
		t.Fatal("Reactor.Loop in a RunParked task: not on the loop")
	}
	var h Handle
	ran := make(chan struct{})
	waitParked(t, r)
	if !X.RunParked(r, func(unsafe.Pointer, uint64) {
		done := make(chan struct{})
		go func() { h = kept.Immediate(func() { close(ran) }); close(done) }()
		<-done
	}, nil, 0) {
		t.Fatal("RunParked declined a parked, open reactor with nothing queued")
	}
	if h.kind != handleRemote {
		t.Errorf("a Loop kept from a RunParked task, used by another goroutine during the same waiter's next one: Handle kind %d, want %d (through the ring)", h.kind, handleRemote)
	}
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("the kept Loop's task never ran")
	}
}
