package engine_test

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A Lock.Wait step passed with values by External.Success from another
// flow's step on the loop (the on-loop path f17d5ba wrote out in Success):
// it enters its section as the same step with those values, Holds true,
// and its Leave runs once; it does not complete as a plain External.
func TestLockWaitSuccessFromAFlowOnTheLoop(t *testing.T) {
	r := reactor.NewManual()
	var log logger
	ts := newTurnstile(&log)
	var first engine.External
	holder := engine.New(r)
	holder.Sync(ts, func(as *engine.Steps) { first = as.External() })
	holder.Execute()
	r.RunUntilIdle()

	root := engine.New(r)
	root.Sync(ts, func(as *engine.Steps) {
		log.add("in %d %v", as.Arg(0).Int(), as.Holds(ts))
	}, nil)
	root.Add(log.fn("next"))
	p := root.Promise()
	r.RunUntilIdle()
	log.check(t, "queue")
	log.lines = nil

	// A second slot goes to the waiter with a value, from a step of a
	// third flow (the holder stays inside).
	other := engine.New(r)
	other.Add(func(as *engine.Steps) {
		w := ts.q[0]
		ts.q = ts.q[1:]
		w.queued = false
		ts.inside++ // the waiter's, beside the holder's still inside
		if !w.ext.Success(engine.Int(9)) {
			t.Error("Success on the waiting Lock.Wait step reported false")
		}
		if w.ext.Success(engine.Int(10)) {
			t.Error("second Success reported true")
		}
	})
	other.Execute()
	r.RunUntilIdle()
	_, err := waitDone(t, p)
	wantNoErr(t, err)
	log.check(t, "in 9 true", "leave", "next")
	first.Pass() // the holder's section ends: its Leave finds nobody queued
	r.RunUntilIdle()
	if ts.inside != 0 || len(ts.q) != 0 {
		t.Errorf("inside %d, queued %d after the flows ended, want 0, 0", ts.inside, len(ts.q))
	}
	holder.Release()
	root.Release()
	other.Release()
}
