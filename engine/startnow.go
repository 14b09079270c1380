package engine

import "unsafe"

// startRootNow is startRoot for a root executed by a goroutine that found
// its loop parked with nothing queued (Execute, through
// reactor.X.RunParked): the caller holds the loop word and runs this task
// alone, first in its turn, so the flow starts
// and runs its first turn at once, as Execute on the loop runs a root it
// starts outside any step and walk, rather than joining the ready queue
// for the turn's RunReady to take it back out (the FanOut row: a Promise's
// start from ordinary code paid the queue's round trip, prepareStart's
// tests twice and RunReady's batch, each flow). A root that finds flows
// ready ahead of it, or is started inside a walk, or is anything but a
// pooled root run again with at most a name, a Promise, a Batch or an
// OnEnd to its extension, takes startRoot's way (queued): roots start in
// the order of their Execute calls either way.
//
// It is never posted (PostRun and Post get startRoot): a task taken from
// the ring may have start tasks behind it in the same drain, and a flow
// run at once there could execute a root on its loop that overtakes
// them, although their Execute calls came first
// (TestRingStartsKeepExecuteOrderAgainstRootsTheirStepsExecute).
//
// Its start is prepareStart's short start (and startNamedKept's for an
// extension), without the queue: change them together.
func startRootNow(arg unsafe.Pointer, g uint64) {
	rt := (*root)(arg)
	if rt.execGen() != g || rt.started {
		return // a start for a run that is already over
	}
	e := rt.e
	fl := rt.Steps.fl
	if fl == nil || !rt.keepFlow || fl.owned || fl.holding || rt.created != 0 ||
		rt.Steps.qlast == nil || e.build.want.Load() || rt.run.Load()&runCancel != 0 ||
		e.readyHead != nil || e.running || e.cur != nil {
		e.prepareStart(rt)
		return
	}
	var n *Name
	if x := rt.more.Load(); x == nil {
		rt.started = true
		e.m.started++ // metrics.go
		e.stats.FramesLive += int(rt.built)
		if rt.built > rt.spareCap { // keepFlow: its frames stay its spares
			rt.spareCap = rt.built
		}
		rt.built = 0
		fl.resetArgs()
		e.linkRun(fl)
		rt.Steps.setStatus(stActive)
		c := rt.Steps.dequeue()
		c.fl = fl
		fl.cur = c
	} else if x.startsPlain() && !x.deferStart {
		e.startNamedKept(rt, fl, x, false)
		n = x.name
	} else {
		e.prepareStart(rt)
		return
	}
	fl.action = actExec
	if !e.runStarted(fl, n) {
		e.startedRaised(fl)
	}
}

// startPromiseNow is startRootNow for Promise's direct start (Promise
// off the loop, which found the loop parked): under the loop word it
// makes the Promise from the loop's own slab (a plain count, not
// newPromise's locked add), starts the run, and returns the Promise for
// Promise to return (reactor.X.RunParkedP). x is the root's extension,
// which Promise made (waitExt) before it claimed the run; the run is g,
// just claimed, not started, and nothing ends a run before its start
// (cancelRoot), so startRootNow starts it. Nothing of rt is read after
// startRootNow: the flow may have ended and released the root there.
func startPromiseNow(arg unsafe.Pointer, g uint64) unsafe.Pointer {
	rt := (*root)(arg)
	e := rt.e
	x := rt.more.Load()
	var p *Promise // the loop's own slab (promise_slab.go)
	if n := e.loopFree; n != 0 {
		e.loopFree = n - 1
		p = &e.loopSlab.p[promiseSlabN-n]
	} else {
		p = e.newLoopSlab()
	}
	p.r = e.r
	x.promise = p
	startRootNow(arg, g)
	return unsafe.Pointer(p)
}
