//go:build linux

package engine

import (
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A flow that releases its own root at its end (ReleaseAtEnd from its own
// step, which the contract allows) and ends inside Promise's direct start
// (startPromiseNow): the end releases the root under the loop word, and
// Release empties the root's extension. Promise must still return the
// Promise it made, ended with the flow's values, not whatever the emptied
// (or reused) extension holds.
func TestPromiseDirectStartReleaseAtEndInStep(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin})
	if !waitParked(r, 2*time.Second) {
		t.Skip("the loop never parks (the Polling fallback): Promise never runs a turn")
	}
	name := NewName("direct.release")
	direct := 0
	for i := range 40 {
		waitParked(r, reactortest.Hang)
		me := goid.Current()
		onCaller := false
		root := New(r)
		if i%2 == 1 {
			// A named root: its extension is the kept kind (extKept),
			// which Release empties.
			root.SetFlowName(name)
		}
		root.Add(func(as *Steps) {
			onCaller = goid.Current() == me
			root.ReleaseAtEnd()
			as.Success(Int(int64(i)))
		})
		p := root.Promise()
		if onCaller {
			direct++
		}
		if p == nil {
			t.Fatalf("flow %d (direct start %v): Promise returned nil", i, onCaller)
		}
		a, err := p.Wait()
		if err != nil || a.Len() != 1 || a.At(0).Int() != int64(i) {
			t.Fatalf("flow %d (direct start %v): Wait = %v, %v", i, onCaller, a, err)
		}
		if !rootOf(root).isReleased() {
			t.Fatalf("flow %d: the root is not released after its flow's end", i)
		}
	}
	if direct == 0 {
		t.Skip("no Promise found its loop parked")
	}
}
