package engine

// DropQueued drops the steps at level 0 of root's run that have not
// started yet, as if they had never been added: the run ends after the
// level-0 step it is in now (that step's sub-steps, handlers and wait
// included), with that step's outcome. It returns how many steps it
// dropped.
//
// For a server that runs several requests as the level-0 steps of one
// flow (stepsd: one flow per read): when the flow waits at one request, it
// hands the requests behind it to flows of their own and drops their steps
// here, so the flow ends when that request does, and is counted as it
// ends (Metrics), not as a failure raised only to skip the rest.
//
// Loop only (a mistake elsewhere panics, naming it), from a callback of
// any flow, root's own included. A root whose run has not started on the
// loop (being built, or executed and not yet started) keeps its steps:
// DropQueued returns 0 and changes nothing. A nil root or a step's
// accessor panics, naming the mistake: in a callback, that flow fails
// with InternalError.
func (internals) DropQueued(root *Steps) int {
	if root == nil || root.kind != kRoot {
		// In a callback the panic is that flow's InternalError (drive).
		panic("engine: X.DropQueued: not a root (New's Steps)")
	}
	rt := rootOf(root)
	if !rt.running() {
		return 0 // being built (or ended): its steps are its builder's
	}
	e := root.e
	if !e.r.IsSameThread() {
		panic("engine: X.DropQueued called off the root's loop: a run's steps are the loop's; call it from a callback on that loop")
	}
	if !rt.started {
		return 0 // executed, not started yet: its steps are its start's
	}
	n := 0
	for c := root.dequeue(); c != nil; c = root.dequeue() {
		e.discardQueued(c)
		e.releaseFrame(c)
		n++
	}
	return n
}
