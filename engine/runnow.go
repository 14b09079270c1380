package engine

import "github.com/asyncsteps/asyncsteps/reactor"

// RunReady runs, now, the flows ready on r's loop (those Execute queued
// from the loop, and any other flow that became ready), each until it
// waits or ends, as the loop itself would later in this iteration. It is
// for the loop's own callbacks that start flows and want their outcome at
// once: a network handler that starts a flow per request of a read can
// write the replies of the ones that finish before it returns, in one
// write, instead of a turn later (stepsd does). It reports whether flows
// are still ready (they run later, as usual).
//
// Execute from such a callback already runs its flow's first turn itself
// when nothing is ready ahead of it; it queues the flow only behind
// another ready flow, or for a root held back with X.DeferStart, which a
// callback that must do its own bookkeeping between its Executes and
// their run (stepsd splits a read's flow first) sets on its roots.
//
// Called off r's loop, from inside a step's callback, a cancel or finally
// handler, a Lock's Leave or an OnEnd, or while the loop is already
// running its flows, it does nothing and returns false: flows never run
// inside another flow's step, nor while the engine cancels or ends one.
func RunReady(r *reactor.Reactor) bool {
	e, ok := reactor.X.Ext(r, extKey).(*engine)
	if !ok || e.cur != nil || e.running || e.readyHead == nil || !r.IsSameThread() {
		return false
	}
	return e.RunReady()
}
