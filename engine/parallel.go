package engine

import "unsafe"

// newFlow takes a branch flow from the loop's free list.
func (e *engine) newFlow(rt *root) *flow {
	fl := e.freeFlows
	if fl != nil {
		e.freeFlows = fl.nextBranch
		fl.nextBranch = nil
	} else {
		fl = &flow{e: e}
	}
	fl.root = rt
	e.stats.FlowsLive++
	return fl
}

// releaseFlow returns a branch flow, taking it out of the ready queue.
func (e *engine) releaseFlow(fl *flow) {
	e.unlinkReady(fl)
	fl.root, fl.top, fl.cur, fl.par = nil, nil, nil, nil
	fl.action = actNone
	fl.clearArgs()
	clear(fl.held)
	fl.held, fl.holding = fl.held[:0], false
	fl.nextBranch = e.freeFlows
	e.freeFlows = fl
	e.stats.FlowsLive--
}

func (f *Steps) branches() *flow { return (*flow)(f.x) }

// startParallel turns each queued branch of p into its own flow, started in
// the order added; p's flow waits until they all end (spec 1.4).
func (e *engine) startParallel(p *Steps) {
	fl := p.fl
	if p.qlast == nil {
		fl.clearArgs()
		fl.action = actDone
		return
	}
	p.setStatus(stActive)
	var last *flow
	for s := p.dequeue(); s != nil; s = p.dequeue() {
		bf := e.newFlow(fl.root)
		bf.top, bf.cur, bf.par = s, s, p
		s.fl = bf
		if last == nil {
			p.x = unsafe.Pointer(bf)
		} else {
			last.nextBranch = bf
		}
		last = bf
		e.ready(bf, actExec)
	}
	fl.action = actNone
}

func (e *engine) unlinkBranch(p *Steps, bf *flow) {
	if p.branches() == bf {
		p.x = unsafe.Pointer(bf.nextBranch)
	} else {
		for x := p.branches(); x != nil; x = x.nextBranch {
			if x.nextBranch == bf {
				x.nextBranch = bf.nextBranch
				break
			}
		}
	}
	bf.nextBranch = nil
}

// branchDone ends a branch whose top step succeeded. Its values are
// dropped; when the last branch ends, the parallel step succeeds with none.
// p's list of branches holds exactly those still running (startParallel
// links each, unlinkBranch and cancelBranches take them out), so an empty
// list is the count of zero: the frame keeps no counter of its own.
func (e *engine) branchDone(bf *flow) {
	p := bf.par
	e.unlinkBranch(p, bf)
	e.releaseFrame(bf.top)
	e.releaseFlow(bf)
	if p.branches() == nil {
		pfl := p.fl
		pfl.clearArgs()
		pfl.cur = p
		e.ready(pfl, actDone)
	}
}

// branchFailed ends a branch whose error was not recovered: its siblings are
// canceled (cancel handlers run), then the parallel step fails with code.
func (e *engine) branchFailed(bf *flow, code string) {
	p := bf.par
	e.unlinkBranch(p, bf)
	e.releaseFrame(bf.top)
	e.releaseFlow(bf)
	e.cancelBranches(p)
	pfl := p.fl
	pfl.cur = p
	// State already holds the branch's error, captured where it was raised.
	pfl.failCode, pfl.failRecorded = code, true
	e.ready(pfl, actFail)
}

// cancelBranches cancels every branch still running under p.
func (e *engine) cancelBranches(p *Steps) {
	for bf := p.branches(); bf != nil; {
		next := bf.nextBranch
		e.cancelFlow(bf)
		e.releaseFlow(bf)
		// A branch canceled while it waits was not queued again, which
		// would have overwritten parked's hint (prevReady): cleared, or
		// the branch pool (never trimmed) keeps the hinted flow from the
		// GC. releaseFlow unlinked it, so it is not a link.
		bf.prevReady = nil
		bf = next
	}
	p.x = nil
}
