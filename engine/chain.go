package engine

// Chains: a bridge that runs steps of its own inside a step's callback.
//
// abi runs the C steps that a C step added back to back in C, without
// returning to Go between them (abi/chain.go). For the engine the whole
// chain happens inside the adding step's callback, so it must be told
// three things, and only these:
//
//   - how many steps the flow may still run in this turn (ChainBudget), so
//     that a chain yields where the engine would (turnBudget), and whether
//     the step's state lets a chain start at all;
//   - how many steps the chain ran to the end (ChainRan): they count against
//     the budget and in Metrics as steps the engine ran;
//   - where the chain stopped (EnterSub): the adding step's callback is then
//     treated as returned with its sub-steps queued, and the first queued
//     sub-step becomes the running step, with the values the chain's last
//     completed step succeeded with, as if the engine had advanced to it
//     and called its callback. The callback that returns to the engine is
//     then that sub-step's (run and exec read e.cur after the call).
//
// Nothing else of the engine runs between a step's return and its first
// sub-step, nor between two sub-steps that succeed plainly (advanceFast),
// within one turn: cancels from other goroutines, timers and other flows
// are looked at between turns. So a chain that stops where the engine
// would have done anything else observes the same states as the engine.

// ChainBudget returns how many steps a bridge may run itself inside the
// callback of as before it must hand the flow back (EnterSub or a return
// to the engine), or 0 when it must run none: as must be the step whose
// ExecFunc is running, with nothing armed, raised, queued, forwarded or
// locked on it, and the loop not tracing (a chain has no trace regions).
func (internals) ChainBudget(as *Steps) int {
	if !chainable(as) || as.qlast != nil || as.fl.owned || as.e.left < 0 {
		// Owned values in the flow's arguments are dropped when the step
		// returns with sub-steps, before the first one runs: no chain,
		// whose steps would run before the drop.
		return 0
	}
	return as.e.left
}

// chainable reports whether as is a running step a bridge may run a chain
// in, or enter a sub-step of (sub-steps aside).
func chainable(as *Steps) bool {
	if as == nil || as.kind != kStep || as.e == nil || as.fl == nil {
		return false
	}
	e := as.e
	return e.cur == as && e.raised.kind == raiseNone && !e.tracing && as.flags&^(fBuilt|fBare) == 0 &&
		as.oncancel == nil && as.ctl.Load()&xMask == xNone
}

// ChainRan takes n steps, run to their end by a bridge inside the
// callback of as (ChainBudget), from the flow's budget for this turn.
func (internals) ChainRan(as *Steps, n int) {
	as.e.left -= n
}

// EnterSub ends the callback of as, the running step, as returned with the
// sub-steps it added, and makes the first of them the running step with
// vals as its arguments (not owned values: Bridge.Drop never sees them),
// taking one step from the budget. It returns the sub-step's accessor, or
// nil (having done nothing) when as is not a step ChainBudget allows, or
// has no sub-step, or the budget is spent. The bridge then serves the sub-step's callback: what it
// records is applied to the returned accessor, and when the ExecFunc of as
// returns the engine goes on from the sub-step.
func (internals) EnterSub(as *Steps, vals []Value) *Steps {
	if !chainable(as) || as.e.left <= 0 || as.qlast == nil || len(vals) > MaxArgs {
		return nil
	}
	e, fl := as.e, as.fl
	// advanceFast's sub-step case, as when the callback of as returns.
	as.setStatus(stActive)
	if fl.owned {
		fl.dropArgs(nil)
	}
	fl.args.reset()
	c := as.dequeue()
	c.fl = fl
	fl.cur = c
	fl.action = actExec
	// run's step entry, without the call: the bridge's callback runs.
	e.chaining = false
	e.left--
	fl.args.set(vals)
	fl.narrow = false
	c.setStatus(stRunning)
	e.cur = c
	return c
}

// ChainStart tells the engine that the bridge runs a chain inside the
// callback of as (ChainBudget allowed it): until EnterSub or ChainEnd,
// Go code that acts on the running step makes the engine call
// Bridge.Enter first.
func (internals) ChainStart(as *Steps) {
	as.e.chaining = true
}

// ChainEnd ends what ChainStart began.
func (internals) ChainEnd(as *Steps) {
	as.e.chaining = false
}

// leaveChain has the bridge enter its chain's current step, if a chain
// runs that has not: Go code is about to act on the running step.
func (e *engine) leaveChain() {
	if e.chaining {
		e.chaining = false
		if bridge.Enter != nil {
			bridge.Enter(e.bridge)
		}
	}
}
