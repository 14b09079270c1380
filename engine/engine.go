package engine

import (
	"runtime/trace"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/arena"
	"github.com/asyncsteps/asyncsteps/internal/prefetch"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// engine is the per-reactor half of the engine: pools and the ready queue.
// Everything here is owned by the loop except rootMu's fields.
type engine struct {
	r  *reactor.Reactor
	ar *arena.Arena

	free      *Steps // frame free list
	freeFlows *flow  // branch flow free list

	freeRootFlows *flow // root flow free list (attachFlow), linked by nextBranch

	readyHead, readyTail *flow
	batchEnd             *flow // the last flow of RunReady's batch, while it runs
	// pending is the reactor's Ext.Pending: true from the moment a flow
	// is queued until a RunReady finds the queue empty, so an iteration
	// with only reactor work (an Immediate) skips the runner call. It is
	// the reactor's own flag (X.PendingFlag), which its idle iteration
	// reads with its other sources in one load. Loop only.
	pending *bool
	// running is set while RunReady runs, so the package's RunReady (runnow.go) called
	// from something a flow did outside its callbacks does not nest; and
	// while a cancel handler, a Lock's Leave or OnEnd runs from a cancel,
	// an unwind or a root's end (protectCancel, leaveLock, finishRoot): the
	// engine is then in the middle of a walk over frames and branches that
	// flows run by RunReady could end and pool under it.
	running bool

	runHead *flow // root flows running, linked by prevRun/nextRun

	// cur is the frame whose callback (or error handler) is running, nil
	// between callbacks. Execution-API calls are valid only on cur.
	cur *Steps
	// raised is set by Error, Break, Continue and misuse inside a callback,
	// which then unwind to the engine with a panic of &raiseSignal.
	raised raise

	stats Stats
	m     counters // Metrics (metrics.go)

	// left is the running flow's budget for this turn (drive): a field, so
	// that a bridge running steps of its own inside a callback can take
	// them from it (chain.go) without the budget escaping per drive.
	left int
	// chaining is set while a bridge runs a chain inside the running
	// step's callback and has not entered its current step (chain.go).
	chaining bool

	// label is the flow name the loop last decided labels for, labeled
	// whether its goroutine carries that name's pprof label, lab whether
	// named flows carry one now (label.go); region is the trace region of
	// the step running, and tracing whether runtime/trace was on when the
	// turn began.
	label   *Name
	labeled bool
	region  *trace.Region
	tracing bool
	lab     labelState

	rootLocal rootRing // roots released on the loop, for New on the loop: no lock

	bridge unsafe.Pointer // a bridge's per-reactor state (BridgeData)

	rootMu    spinLock // guards rootFree, rootsLive and build's list: New and Release run on any goroutine
	rootFree  rootList
	rootsLive int
	build     buildPool // frames for roots built off the loop (buildpool.go)

	trim trimState // idle pools give memory back (trim.go)

	// raisedAt is the frame whose callback raised or panicked, from
	// drive1's recover (caught) to driveOn, which settles it and clears
	// it; panicked and panicV say that it panicked (not a raise) and with
	// what, for driveOn to record. A panic becomes the flow's
	// InternalError in driveOn, not in caught: drive1's deferred function
	// also runs for runtime.Goexit (t.FailNow in a step), after which
	// drive1 never returns, and an error set there would stay set for the
	// next callback of another flow, failing it; for the same reason
	// caught moves a raise out of e.raised into caughtRaise, which only
	// driveOn reads (a raise's recover may also be left by a Goexit: a
	// deferred call that raises while the Goexit unwinds). Last in the
	// struct: the turn never reads them.
	raisedAt    *Steps
	panicked    bool
	panicV      any
	caughtRaise raise // the raise caught found, for driveOn
	// batchFl is the flow runBatch drives, or the one at which it
	// stopped the batch (for caught, then driveOn or cancelRun); it may
	// hold the batch's last flow after the batch, and is read only where
	// runBatch has just set it.
	batchFl *flow
	// parkRing holds the last parkAhead steps that parked through
	// advanceFast's waiting case with an External armed, each with its
	// ctl word as it parked (parkCtl); parkAt counts the parks, its low
	// bits the slot of the oldest. Each step that parks leaves its
	// address, and its flow's, in the one that parked parkAhead before it,
	// if that one still waits (parked). Loop-owned; a slot may be stale
	// (the step completed, canceled, freed, reused off the loop), which
	// parked tells by the ctl word alone.
	parkRing [parkAhead]*Steps
	parkCtl  [parkAhead]uint64
	parkAt   uint32

	// loopSlab is the slab a Promise started directly under the loop
	// word (startPromiseNow) takes its slot from, loopFree slots of it
	// left (0: none, or no slab): only the word's holder claims from it,
	// with a plain count (startPromiseNow, promise_slab.go). Loop-owned.
	loopSlab *promiseSlab
	loopFree uint32

	// promises is the slab Promise carves this reactor's Promises from
	// (promise_slab.go): claimed from any goroutine, padded off the loop's
	// fields.
	promises promiseSlabs
}

// Stats are the engine's occupancy counters for one reactor, for tests and
// monitoring: a flow that has ended, whatever the way, gives back every frame
// and branch it took.
type Stats struct {
	FramesLive    int // step frames in use (queued, running or waiting, or kept by a running loop iteration for its next sub-steps), roots excluded
	FramesCreated int // step frames ever allocated by the loop
	FlowsLive     int // parallel branches running
	RootsLive     int // roots handed out by New and not Released (counted on the loop and off it)
	FramesFree    int // step frames in the loop's free list (up to 256 more wait for roots built off the loop; no counter has them)
	Trimmed       int // frames, roots and root flows the idle pools gave back to the GC (trim.go)
	RootFlowsFree int // root flows in the loop's pool; a root from the pool, or one run more than once, keeps its flow between runs (root.keepFlow)
}

// raise describes what the running callback asked the engine to do instead
// of returning normally.
type raise struct {
	kind     uint8 // raiseNone, raiseError, raiseBreak, raiseContinue
	code     string
	label    string
	hasLabel bool
}

const (
	raiseNone = iota
	raiseError
	raiseBreak
	raiseContinue
)

// raiseSignal is the panic value that carries a raise to the engine. Its
// address is the identity; panicking with a pointer does not allocate.
var raiseSignal = new(int)

// flow is one sequential thread of a root: the root's own, or one branch
// of a parallel step.
//
// Invariants:
//   - cur is the flow's deepest live frame: every frame between it and top
//     is stActive (or the parallel step a branch waits on).
//   - A flow runs only from the ready queue (RunReady), from the task
//     that starts or resumes it, or from the Execute that starts it on
//     the loop with nothing ready ahead (runStarted), never inside
//     another flow's callback.
type flow struct {
	// The fields an External's completion on the loop touches (cur,
	// owned, narrow, args' slot 0; action, queued and prevReady as it
	// queues the flow) fill the first 64 bytes, and a flow is 488 bytes,
	// in the 512-byte size class, so they are one cache line: a round over
	// many parked flows (the ParallelWaitLoop row) has evicted the
	// flow, and that completion misses once, not twice. The flow's turn
	// reads that line and root and top. flow_layout_test.go checks it.
	cur *Steps // deepest live frame: the one to run or advance

	action uint8 // what the flow does when it runs next
	queued bool  // in the ready queue
	owned  bool  // args may hold owned values (binary.go): checked before they are replaced
	// narrow: args' slots 1-3 are empty, so that the one-value success
	// and the reset on the step path need not read (and miss on) the
	// metas of the upper slots. False is always safe (it only costs that
	// look). resetArgs and setArg1 set it (they leave slots 1-3 empty);
	// every write that may fill them (set with two or more values, a
	// copy of a whole Args) clears it; args.reset keeps it true.
	narrow bool
	// holding: held (below) is not empty. The starts test it here, in the
	// line they read anyway, not held's length in the flow's last line,
	// which nothing else of a plain run touches (New prefetched that line
	// for the test alone). Written wherever held is: Hold, Unhold, and the
	// clears (attachFlow, detachFlow, releaseFlow).
	holding bool

	// prevReady, nextReady: in the ready queue; a flow that ends is
	// unlinked (unlinkReady). While the flow is not queued, prevReady may
	// hold another flow's address, parked's hint for External.Success: it
	// is read as a link only while queued, and ready writes it first.
	prevReady, nextReady *flow
	args                 Args // what the last successful step gave the next one

	e    *engine
	root *root
	top  *Steps // root frame, or the branch's step

	prevRun, nextRun *flow // a root's flow, in engine.runHead while it runs

	par        *Steps // the parallel step of a branch; nil for a root flow
	nextBranch *flow  // next branch of the same parallel step

	// fail*: why fl.cur failed, for actFail. failRecorded: State already
	// describes this failure (a branch's error reaching its parallel step).
	failCode, failInfo string
	failErr            error
	failRecorded       bool

	// x*: the mailbox of an External finishing fl's waiting step from
	// another goroutine. Written only while that step's ctl is xWriting,
	// read by the loop only after it CASes xClaimed away: the loop may be
	// running the step's callback (and reading args) meanwhile.
	xargs        Args
	xcode, xinfo string
	xerr         error
	xpass        bool // the External result keeps the step\'s own values

	held []any // sync objects this flow holds (Hold/Unhold), for reentrance
	// locked counts the flow's frames flagged fLocked (entered AddLocked
	// sections): raised where fLocked is set (callLocked, relock), lowered
	// where it is cleared (stepend.go, leftPlainly, leaveCompleted). With
	// held empty, 0 lets Holds answer false without walking the frames (the
	// Limiter's reentrance check, every stepsd request). It may only ever
	// count too many (a frame dropped with fLocked set), which costs that
	// walk, never a wrong answer.
	locked int32
}

// resetArgs is args.reset on the step path: with narrow set only slot 0
// can hold a value, and the upper slots' metas are not read.
func (fl *flow) resetArgs() {
	if fl.narrow {
		if fl.args.v[0].meta != 0 {
			fl.args.v[0] = Value{}
		}
		return
	}
	fl.args.reset()
	fl.narrow = true
}

// setArg1 is args.set1 on the step path (see resetArgs).
func (fl *flow) setArg1(v Value) {
	fl.args.v[0] = v
	if !fl.narrow {
		fl.args.v[1], fl.args.v[2], fl.args.v[3] = Value{}, Value{}, Value{}
		fl.narrow = true
	}
}

func (fl *flow) clearMailbox() {
	if fl.xargs.hasOwned() {
		dropOwned(&fl.xargs, nil)
	}
	fl.xargs.reset()
	fl.xcode, fl.xinfo, fl.xerr, fl.xpass = "", "", nil, false
}

// Flow actions.
const (
	actNone = iota // suspended (waiting) or ended
	actExec        // run fl.cur, a queued frame
	actDone        // fl.cur completed successfully: advance
	actFail        // fl.cur failed with failCode: unwind
)

// extKey is the engine's attachment to a reactor: no other layer holds it,
// so none can take or replace the engine's per-reactor state.
var extKey = reactor.X.NewExtKey("engine")

func engineOf(r *reactor.Reactor) *engine {
	// Attached already (every call but the first): one load, inlined,
	// instead of ExtOrInit's call, its defer and the closure.
	if e, ok := reactor.X.Ext(r, extKey).(*engine); ok {
		return e
	}
	return reactor.X.ExtOrInit(r, extKey, func() reactor.Ext {
		e := &engine{r: r, ar: arena.New(), pending: reactor.X.PendingFlag(r)} // arena: the engine's own frames and Stack memory
		return reactor.Ext{
			Value:   e,
			Runner:  e, // RunReady: the method itself, not a method value's wrapper
			Ready:   func() bool { return e.readyHead != nil },
			Close:   e.closeAll,
			Pending: e.pending,
		}
	}).(*engine)
}

// closeAll ends every flow still running when the reactor shuts down: each
// is canceled (cancel handlers run) and ends with Canceled, info "reactor
// closed", so no Promise waits forever.
func (e *engine) closeAll() {
	for e.runHead != nil {
		rt := e.runHead.root
		st := rt.stateForWrite()
		st.ErrorInfo = "reactor closed"
		st.LastException = &Error{Code: Canceled, Info: "reactor closed"}
		e.cancelBelow(&rt.Steps)
		e.finishRoot(rt, Canceled)
	}
	e.readyHead, e.readyTail = nil, nil
	*e.pending = false
}

// StatsOf returns the engine's counters for r. Loop only (or while no loop
// runs).
func StatsOf(r *reactor.Reactor) Stats {
	e := engineOf(r)
	s := e.stats
	e.rootMu.Lock()
	s.RootsLive += e.rootsLive
	e.rootMu.Unlock()
	return s
}

// ready queues fl to run on the loop. Loop only.
func (e *engine) ready(fl *flow, action uint8) {
	fl.action = action
	if fl.queued {
		return
	}
	fl.queued = true
	*e.pending = true
	fl.prevReady = e.readyTail
	if e.readyTail == nil {
		e.readyHead = fl
	} else {
		e.readyTail.nextReady = fl
	}
	e.readyTail = fl
}

// unlinkReady takes a flow that ends (a branch released, a root finished)
// out of the ready queue. Left there, a branch flow reused at once for
// another parallel step would start from the dead flow's place in the
// queue instead of behind the flows readied before it (found by the
// fault-injection test: canceling one root reordered another root's
// branches).
func (e *engine) unlinkReady(fl *flow) {
	if !fl.queued {
		return
	}
	if fl == e.batchEnd {
		e.batchEnd = fl.prevReady // nil: fl was the batch's last left
	}
	if fl.prevReady == nil {
		e.readyHead = fl.nextReady
	} else {
		fl.prevReady.nextReady = fl.nextReady
	}
	if fl.nextReady == nil {
		e.readyTail = fl.prevReady
	} else {
		fl.nextReady.prevReady = fl.prevReady
	}
	fl.prevReady, fl.nextReady = nil, nil
	fl.queued = false
}

// RunReady is the reactor's Ext.Runner (exported for the interface; the
// engine type is not, so neither is the method): it runs the flows that were ready when
// it started (up to batchEnd, which unlinkReady keeps pointing into the
// queue) and reports whether more became ready.
func (e *engine) RunReady() bool {
	if e.cur != nil {
		// A callback drives its own manual reactor: flows never run inside
		// another flow's callback (its step would lose its outcome). They
		// run when the outer drive goes on.
		return false
	}
	if e.running {
		return e.runReadyNested()
	}
	e.tracing = trace.IsEnabled()
	e.running = true
	e.batchEnd = e.readyTail
	if st := e.runBatch(); st != batchOver {
		e.batchStopped(st) // out of line: the common batch runs to its end
	}
	if e.label != nil {
		// The loop's own work is no flow's: the next turn decides anew.
		e.label = nil
		if e.labeled {
			e.switchLabel(nil)
		}
	}
	e.running = false
	more := e.readyHead != nil
	*e.pending = more
	return more
}

// runStarted is RunReady's batch for one flow: the flow of a root that
// Execute has just started on the loop, outside any step and any engine
// walk (e.cur nil, running clear), with no flow ready ahead of it (so
// the order of starts and of ready flows is the queue's). It drives fl
// now, under the turn's budget and recover, as the next pass of the loop
// would have first thing, and leaves what it readied (fl itself, past
// the budget) queued for that pass. n is the flow's name, for its label.
// It saves the queue's round trip and the loop's pass over its other
// sources (the Simple row, driver=loop).
//
// It is drive1 and RunReady in one frame: the recover is its own (the
// deferred closure tests done, as drive1's), and it reports false when a
// callback raised or panicked, caught having run; the caller then calls
// startedRaised, outside any deferred function, as RunReady calls
// batchStopped. One frame and one call fewer than through drive1. It
// runs the flow's first step itself (run's first round) and calls run
// only if the flow goes on; and it links the flow into the run list
// (linkStarted) if the flow is still running when the turn ends or a
// callback panics or exits the goroutine, which lets Execute's fast
// start skip the link (and the end its unlink) for a flow that ends in
// its first turn.
func (e *engine) runStarted(fl *flow, n *Name) (done bool) {
	rt := fl.root // fl may be detached and pooled by its end (detachFlow)
	defer func() {
		if !done {
			e.caught(fl, recover())
			if rt.started {
				e.linkStarted(rt.Steps.fl) // as below: a flow left running is Close's to end
			}
		}
	}()
	e.tracing = trace.IsEnabled()
	e.running = true
	if n != e.label {
		e.switchLabel(n)
	}
	if f := fl.cur; fl.action == actExec && f.kind == kStep && !e.tracing {
		// run's first round for the flow's first step, here rather than
		// through run's call, frame, switch and budget test: a one-step
		// flow (the Simple row) ends within it, and run is called only
		// when the flow goes on. The same statements as run's kStep
		// case, in the same order, with the budget already taken for
		// this step.
		e.left = turnBudget - 1
		f.setStatus(stRunning)
		e.cur = f
		f.fn(f)
		f = e.cur // a bridge may have entered a sub-step of f (EnterSub)
		e.cur = nil
		if e.raised.kind != raiseNone {
			e.settle(f) // the callback recovered our panic itself; the raise still stands
		} else if !e.advanceFast(fl, f) {
			e.afterCallback(f)
		}
		if fl.action != actNone { // run would return at once on actNone
			e.run(fl, &e.left)
		}
	} else {
		e.left = turnBudget
		e.run(fl, &e.left)
	}
	if rt.started {
		// Still running (waiting, or queued past the budget), or run
		// again (an OnEnd's Execute): its flow is in the run list from
		// now on, for Close (Execute's fast start leaves the link to
		// here). rt's flow, not fl: fl may have ended, been pooled and
		// been taken by another root meanwhile.
		e.linkStarted(rt.Steps.fl)
	}
	// startedOver, inline: its call and frame were ~8 instructions.
	e.m.steps += uint64(turnBudget - e.left)
	if e.label != nil {
		e.unlabelTurn()
	}
	e.running = false
	return true
}

// unlabelTurn is the label part of a turn's end (startedOver), out of
// line: a named flow's.
func (e *engine) unlabelTurn() {
	e.label = nil
	if e.labeled {
		e.switchLabel(nil)
	}
}

// startedRaised goes on with a flow whose first turn runStarted stopped
// at a raise or a panic (caught has run): driveOn unwinds and drives it on
// under drive1's recover, then the turn ends as runStarted's.
//
//go:noinline
func (e *engine) startedRaised(fl *flow) {
	e.driveOn(fl, &e.left)
	e.startedOver()
}

// startedOver ends runStarted's turn as RunReady ends its batch.
func (e *engine) startedOver() {
	e.m.steps += uint64(turnBudget - e.left)
	if e.label != nil {
		e.label = nil
		if e.labeled {
			e.switchLabel(nil)
		}
	}
	e.running = false
}

// runReadyNested is RunReady entered while running is set: from a cancel
// handler or an OnEnd (e.cur nil, running set by them) that drives its
// manual reactor in the middle of a batch, or after an OnEnd that panicked
// left running set. The batch it runs is RunReady's; batchFl is the outer
// batch's again after it, for the outer runBatch's recover, and so is the
// budget: the inner batch sets e.left for each of its flows, and the outer
// flow's turn, whose budget is e.left, goes on after it with what it had
// left (else it would run a fresh turnBudget and count the inner batch's
// steps in Metrics a second time), and so is the flow label: the inner
// batch ends with the loop's goroutine unlabeled, and the outer flow's
// steps that follow in its turn are its own name's. (After an OnEnd whose
// panic escaped RunReady and left running set, label may name the flow
// that ended: restored, it stays on the loop until the next RunReady ends,
// one batch longer than without the restore.)
//
//go:noinline
func (e *engine) runReadyNested() bool {
	saved, left, label := e.batchFl, e.left, e.label
	e.running = false
	more := e.RunReady()
	e.batchFl, e.left = saved, left
	if label != e.label {
		e.switchLabel(label)
	}
	return more
}

// popReady takes the first flow off the ready queue (the batch's first
// left; batchEnd follows it when it was the last).
func (e *engine) popReady() *flow {
	fl := e.readyHead
	if fl == e.batchEnd {
		e.batchEnd = nil
	}
	e.readyHead = fl.nextReady
	if e.readyHead == nil {
		e.readyTail = nil
	} else {
		e.readyHead.prevReady = nil
	}
	fl.nextReady = nil
	fl.queued = false
	return fl
}

// runBatch's outcomes.
const (
	batchRaised   = iota // a callback of e.batchFl raised or panicked (caught ran)
	batchOver            // the batch is over
	batchCanceled        // e.batchFl was canceled since it was queued: taken off the queue, not driven
)

// runBatch is RunReady's batch loop under one recover: it drives the
// flows of the batch (up to batchEnd) in order, each in e.batchFl while
// it runs, and reports how the batch stopped (batchOver, batchCanceled,
// batchRaised). A canceled flow is left to RunReady (batchStopped) to end
// outside the recover, so its cancel handlers and its end run as they did
// before runBatch. On batchRaised, caught has left the frame whose
// callback raised or panicked in e.raisedAt for driveOn.
//
// One deferred call per batch, not per flow: drive1's frame, its defer and
// its closure were ~38 Ir of every flow's turn, and a round over many
// parked flows (ParallelWaitLoop: 30,000 flows, each completed and then
// run in one batch) paid them for each. The closure captures e
// and st's address; on the common path it tests st. The flow is a field,
// not a captured local, so that it stays in a register. A Goexit ends the
// batch (the goroutine ends) as it ended drive1.
func (e *engine) runBatch() (st uint8) {
	defer func() {
		if st == batchRaised {
			e.caught(e.batchFl, recover())
		}
	}()
	for e.batchEnd != nil {
		fl := e.popReady()
		if n1 := e.readyHead; n1 != nil {
			prefetchTurns(n1) // another flow waits behind fl: its lines, ahead of its turn
		}
		e.batchFl = fl // for caught and batchStopped; stale after the batch, read only when set
		rt := fl.root
		if rt.run.Load()&runCancel != 0 {
			return batchCanceled
		}
		if n := rt.name(); n != e.label {
			e.switchLabel(n) // a switch between differently named flows, while labels are on
		}
		// The budget is a field, not a local: a C step chain
		// (X.ChainBudget) reads and spends it from inside a callback.
		e.left = turnBudget
		e.run(fl, &e.left)
		e.m.steps += uint64(turnBudget - e.left) // every step run took one from the budget
	}
	return batchOver
}

// prefetchTurns asks for the lines the next flows' turns will read, as
// runBatch takes a flow off the ready queue with n1 behind it. A round
// over many parked flows (the ParallelWaitLoop row: 30,000 flows
// completed, then run in one batch) finds every flow's lines evicted, and
// each turn reads them as a chain, each address from the line before: the
// flow's first line (cur, the queue links), its third (root), the root's
// run word, the completed frame. A plain load of each stalls the turn for
// the whole miss, one after another; so they are asked for ahead, each
// from a line that the turn before asked for, two flows deep:
//
//   - the flow after next (n2): its first line and the line of its root
//     pointer, by address alone (n1's first line came with the turn
//     before);
//   - the next flow (n1): its current frame and its root's run word,
//     whose addresses sit on the lines the turn before asked for.
//
// (The completed frame's parent and the sub-step queued after it, asked
// for as the turn starts or one turn ahead, measured no faster and cost a
// second call: profiles/notes/2026-11-28-pwl-round13.md.)
//
// Only pointers the loop owns are read, and a prefetch never faults, so a
// stale or nil address costs nothing but the hint. A batch of one flow
// (the Turn and Simple rows) pays runBatch's nil test alone.
func prefetchTurns(n1 *flow) {
	var n2, n2root unsafe.Pointer
	if n := n1.nextReady; n != nil {
		n2, n2root = unsafe.Pointer(n), unsafe.Pointer(&n.root)
	}
	var run unsafe.Pointer
	if rt := n1.root; rt != nil {
		run = unsafe.Pointer(&rt.run)
	}
	prefetch.Lines(n2, n2root, unsafe.Pointer(n1.cur), run)
}

// parkAhead is how many completions ahead External.Success prefetches
// when completions come in the order the steps parked (parked): a power
// of two, so that parkRing's index is a mask.
const parkAhead = 8

// parked notes f, a plain step that just parked, and leaves its address
// in the next of the step that parked parkAhead before it, and its flow's
// address in that step's flow's prevReady (if that flow is not queued),
// if that step still waits. Completions often come in the order the
// steps parked (a driver that completes every waiting step of a round,
// the ParallelWaitLoop row; a FIFO of events), and each completion misses
// on its step and its flow, one after another, since the CompareAndSwap
// that claims a step waits for the previous completion's stores: with the
// hints, External.Success prefetches the lines of the completion
// parkAhead after its own, read from the two lines it touches anyway.
//
// Which step still waits is told by its ctl word alone, an atomic load:
// only a kStep parked with an External armed is noted, with its ctl, and
// a step that was completed, canceled or destroyed since has had that
// word moved on (Success's CompareAndSwap, disarm), and one reused has
// been armed again with a later generation. Its other fields are not
// read until the word matches: by then the step may belong to a root
// being built on another goroutine (a spare frame), and reading its kind
// or status would race (TestBatchExecuteRacingClose found it). While the
// word matches, the step is the waiting step of a running flow, owned by
// the loop, and so is its flow.
//
// A waiting kStep's next is free: a step leaves its parent's queue when
// it runs (dequeue leaves next stale), and only a loop iteration (kBody)
// keeps frames there (keep). A flow's prevReady is free while it is not
// queued: ready writes it before the flow joins the queue, and
// unlinkReady reads it only for a queued flow. So no hint is ever read as
// a link; Success reads them as addresses to prefetch only, and a stale
// one costs a wasted hint. (trimPools clears prevReady in the flows it
// drops, so that a hint keeps at most one flow from the GC.)
//
// Not inlined: inside advanceFast it cost every other step 1-2
// instructions (the registers of the whole function).
//
//go:noinline
func (e *engine) parked(f *Steps) {
	i := e.parkAt & (parkAhead - 1)
	e.parkAt++
	if lp := e.parkRing[i]; lp != nil && lp != f && lp.ctl.Load() == e.parkCtl[i] {
		lp.next = f
		if lfl := lp.fl; !lfl.queued {
			lfl.prevReady = f.fl
		}
	}
	if c := f.ctl.Load(); f.kind == kStep && c&xMask == xArmed {
		e.parkRing[i], e.parkCtl[i] = f, c
	} else {
		e.parkRing[i] = nil
	}
}

// turnBudget bounds the steps one flow runs before yielding to the rest of
// the loop, so an endless loop cannot starve timers and other flows.
const turnBudget = 4096

// drive1 is the protected part of drive: it runs fl's steps under a
// recover and reports whether they ran without a raise or a panic. On
// false, caught has left the frame whose callback raised or panicked in
// e.raisedAt for driveOn.
//
// The deferred closure is the whole per-turn price of the recover (the
// Turn and Simple rows): it captures three words (e, fl and done's
// address) and, on the common path, tests done and returns; everything
// else it did is caught's, out of line, so the closure's frame stays small. The frame is not a
// result: a named *Steps result cost its zeroing, its capture and its
// return in every turn, for the rare raise.
func (e *engine) drive1(fl *flow, budget *int) (done bool) {
	defer func() {
		if !done {
			e.caught(fl, recover())
		}
	}()
	e.run(fl, budget)
	return true
}

// run is the step loop: the hot path.
func (e *engine) run(fl *flow, budget *int) {
	for {
		switch fl.action {
		case actExec:
			if *budget <= 0 {
				e.ready(fl, actExec)
				return
			}
			*budget--
			f := fl.cur
			if e.tracing {
				e.execTraced(f) // one predictable branch while tracing is off
				continue
			}
			if f.kind != kStep && f.kind != kBody {
				e.exec(f)
				continue
			}
			// A step or a loop iteration, run here rather than through
			// exec so that the common outcome (success, nothing armed)
			// advances to the successor without going round the switch.
			f.setStatus(stRunning)
			e.cur = f
			if f.kind == kStep {
				f.fn(f)
				f = e.cur // a bridge may have entered a sub-step of f (EnterSub): its callback is the one that returned
			} else if f.fn != nil {
				f.fn(f) // a Loop's iteration: its body (loopNext)
			} else {
				f.parent.loop().call(f)
			}
			e.cur = nil
			if e.raised.kind != raiseNone {
				e.settle(f) // the callback recovered our panic itself; the raise still stands
				continue
			}
			if !e.advanceFast(fl, f) {
				e.afterCallback(f)
			}
		case actDone:
			// advance's first round for its common case, without its
			// call and its general tests: a bare step of a loop
			// iteration that waited and was completed (an External's
			// Success: a loop that waits for an event each time, as in
			// the ParallelWaitLoop row). fBare with nothing but fWait and
			// fArmed besides, no timer, nothing queued and its External
			// spent is advance's releasePlain case with keepable true;
			// a kBody parent is never a loop (f is not an iteration)
			// and makes f not the flow's top. The iteration keeps f
			// and its next sub-step runs; with none left, advance goes
			// on from the iteration. (Doing this in Success itself
			// costs two misses per iteration more there: the body's and
			// the next step's lines, read again by this turn;
			// profiles/notes/2026-11-28-ext-round10.md.)
			f := fl.cur
			if p := f.parent; f.flags&^(fWait|fArmed) == fBare && p.kind == kBody {
				// fBare under a kBody is Add's kStep (loopNext's fBare
				// frames are iterations, under a kLoop).
				if f.tidx == 0 && f.qlast == nil {
					if f.ctl.Load()&xMask == xNone {
						p.keep(f)
						if c := p.dequeue(); c != nil {
							fl.cur = c // c.fl is fl: a sub-step of a running iteration
							fl.action = actExec
							continue
						}
						fl.cur = p
					}
				}
			}
			e.advance(fl)
		case actFail:
			f, code := fl.cur, fl.failCode
			if !fl.failRecorded {
				e.setError(f, code, fl.failInfo, fl.failErr)
			}
			fl.failCode, fl.failInfo, fl.failErr, fl.failRecorded = "", "", nil, false
			e.unwind(f, code)
		default:
			return
		}
	}
}

// plainDone is what a completed frame may carry and still take
// advanceFast: Success called (or not), built off the loop (or not).
const plainDone = fSucceeded | fBuilt | fBare

// advanceFast advances fl past f, whose callback just returned, when f
// succeeded plainly: no sub-steps, nothing armed or waited for, no cancel
// or finally handler, not the flow's top. It reports false, having done
// nothing, for anything else: afterCallback and advance decide then. An
// iteration of a loop reuses its own frame for the next iteration when the
// callback left nothing in it to release (no Stack memory, no binding):
// releaseFrame followed by newFrame would hand back the same memory anyway,
// since the free list is LIFO.
func (e *engine) advanceFast(fl *flow, f *Steps) bool {
	// No look at oncancel: it is set only with fArmed (SetCancel, Lock.Wait)
	// or fFinally (SetFinally), neither in plainDone, and those flags are
	// cleared only where oncancel is nil or cleared with them (relock,
	// runCancel, the resets): a cancel or finally handler fails the flags
	// test. It sits in the frame's second line.
	if f.flags&^plainDone != 0 || f.qlast != nil || f == fl.top {
		if f.qlast != nil && f.flags&^(fBuilt|fBare) == 0 && f.ctl.Load()&xMask == xNone {
			// afterCallback's sub-step case (nothing armed, not forwarding
			// its values) without the call: the first sub-step runs next.
			f.setStatus(stActive)
			if fl.owned {
				fl.dropArgs(nil)
			}
			fl.resetArgs()
			fl.cur = f.dequeue()
			fl.action = actExec
			return true
		}
		if f.qlast == nil && f.flags&fWait != 0 && f.flags&^(fWait|fArmed|fBuilt|fBare) == 0 {
			// afterCallback's waiting case without the call: the step
			// parked (External, WaitExternal) and nothing else.
			f.setStatus(stWaiting)
			fl.action = actNone
			e.parked(f)
			return true
		}
		if f.flags&fLocked == 0 || !e.leftPlainly(fl, f) {
			return false
		}
	}
	if f.flags&fSucceeded == 0 {
		// Implicit success (spec 1.6): the next step gets no values.
		if fl.owned {
			fl.dropArgs(nil)
		}
		fl.resetArgs()
	}
	p := f.parent
	if p.kind == kLoop {
		ls := p.loop()
		ls.i++
		if (f.flags&fBare != 0 || f.scope.Empty() && f.bin == nil) && (ls.kind == loopForever || ls.i < ls.n) {
			// The next iteration starts with no values (loopNext).
			if fl.owned {
				fl.dropArgs(nil)
			}
			fl.resetArgs()
			f.flags = fBare // as loopNext leaves a new iteration
			f.setStatus(stQueued)
			fl.action = actExec
			return true
		}
		e.releaseFrame(f)
		e.loopNext(p)
		return true
	}
	// releasePlain's common case inline (a call and its spills were
	// a tenth of a sequential step): nothing held, the root keeps the frame.
	// Once the root's spare list is full, a loop iteration's sub-step stays
	// with the iteration for its next iteration's Add (keep).
	if rt := f.fl.root; rt.spareN < rt.spareCap && (f.flags&fBare != 0 || f.scope.Empty() && f.bin == nil) {
		e.toSpare(rt, f)
	} else if f.flags&fBare != 0 && p.kind == kBody {
		p.keep(f) // keepOrRelease's common case without its call: fBare is keepable
	} else {
		e.keepOrRelease(p, f)
	}
	if c := p.dequeue(); c != nil {
		c.fl = fl // a root-level step built before the start has none yet
		fl.cur = c
		fl.action = actExec
		return true
	}
	if p == fl.top && fl.par == nil && p.flags&(fFinally|fLocked) == 0 {
		// The root's last step: its flow ends now, as advance would end
		// it on the next pass of run's loop. A pooled root's plain end
		// (finishRoot's first part) in this frame: its call and frame
		// were ~12 instructions of Simple.
		// p is the root's frame (a root flow's top; fl.par nil) and
		// its queue is empty (dequeue above), so finishRoot's test of
		// rt.Steps.qlast is not repeated here.
		rt := rootOf(p)
		if fl.queued || !rt.keepFlow {
			e.finishRoot(rt, "")
			return true
		}
		if x := rt.more.Load(); x != nil {
			e.finishKeptExt(rt, fl, x) // tested last, as in Execute
			return true
		}
		rt.started = false
		e.unlinkRun(fl)
		fl.cur = p
		fl.action = actNone
		rt.Steps.setStatus(stIdle)
		e.m.succeeded++ // flowEnded's first case
		rt.endRun()
		if rt.releaseAtEnd.Load() && rt.releaseAtEnd.Swap(false) {
			rt.release()
		}
		return true
	}
	// p's sub-steps are all done: p completes with the last one's values.
	// A loop iteration that holds nothing starts the next one here, as
	// advance would (no finally, no Lock, not the flow's top): one round
	// of run's switch and advance's walk less per iteration of a loop
	// whose body adds steps.
	if p.kind == kBody && p.flags&(fFinally|fLocked) == 0 && p != fl.top && e.reuseIteration(fl, p, p.parent) {
		return true
	}
	fl.cur = p
	fl.action = actDone
	return true
}

// reuseIteration starts loop L's next iteration on f, the iteration that
// just completed, when f holds nothing to release but a spent External (a
// loop that waits for an event each time): releaseFrame and newFrame
// would hand back the same memory anyway, the free list being LIFO. A
// stale External of f stays stale: the next External() bumps the
// generation, and until then ctl is disarmed. It reports false, having
// done nothing, when L is done or f needs the full release.
func (e *engine) reuseIteration(fl *flow, f, L *Steps) bool {
	const spent = fSucceeded | fWait | fArmed
	// fBare (loopNext sets it on every iteration) says oncancel, scope
	// and bin are nil without reading the frame's second line.
	if f.flags&^(spent|fBare) != 0 || f.qlast != nil ||
		f.flags&fBare == 0 && (f.oncancel != nil || !f.scope.Empty() || f.bin != nil) {
		return false
	}
	if f.fn == nil {
		// Repeat, ForEach: the count decides. A Loop's iteration (fn
		// set by loopNext) always goes on, and nothing reads a Loop's
		// index, so its state is not touched.
		ls := L.loop()
		if ls.i+1 >= ls.n && ls.kind != loopForever {
			return false
		}
		ls.i++
	}
	if f.ctl.Load()&xMask != xNone {
		f.releaseClaim()
	}
	if fl.owned {
		fl.dropArgs(nil)
	}
	fl.resetArgs()
	f.flags = fBare // as loopNext leaves a new iteration
	f.setStatus(stQueued)
	fl.cur = f
	fl.action = actExec
	return true
}

// keepOrRelease gives f, a plain step that ended, to its parent p when p
// is a loop iteration that may keep it (keep), or releases it. Out of
// advanceFast so that the rows without loops keep its layout.
func (e *engine) keepOrRelease(p, f *Steps) {
	if p.kind == kBody && f.keepable() {
		p.keep(f)
	} else {
		e.releasePlain(f)
	}
}

// toSpare resets a frame that holds nothing (no Stack memory, no
// binding, nothing queued or armed) and gives it to rt, whose spare list
// has room: releasePlain's common case, inlined where a step ends.
//
// A bare frame's second line is left as found, and the root-level Add
// that takes the frame next gives its step the fn alone: a writer that
// set one of those fields and forgot to clear fBare would hand the next
// step a stale handler or value. The asyncsteps_debug build checks the
// frame here, as keep does.
func (e *engine) toSpare(rt *root, f *Steps) {
	if debugChecks {
		if f.flags&fBare != 0 {
			checkKeptFrame(f, "toSpare: a root's spare list took")
		}
	}
	f.fl, f.parent, f.fn = nil, nil, nil
	if f.flags&fBare == 0 { // fBare: they are nil, and the second line is not touched
		f.onerr, f.x, f.xfn = nil, nil, nil
	}
	f.kind, f.flags, f.st = 0, 0, stFree
	e.stats.FramesLive--
	f.next = rt.spare
	rt.spare = f
	rt.spareN++
}

// releasePlain is releaseFrame for a frame advanceFast vetted: no queued
// sub-steps, no timer (fTimeout), no External (fArmed), so only what a
// plain step can have touched is undone: its Stack memory, its binding,
// and the fields every frame sets. Never a loop iteration (kBody): the
// frames it keeps (keep) go back through releaseFrame.
func (e *engine) releasePlain(f *Steps) {
	if !f.scope.Empty() {
		e.ar.Release(&f.scope)
		f.scope = arena.Scope{}
	}
	if f.bin != nil {
		bridge.release(f.bin, true)
		f.bin = nil
	}
	rt := f.fl.root
	if rt.spareN < rt.spareCap {
		e.toSpare(rt, f)
		return
	}
	f.fl, f.parent, f.fn, f.onerr, f.x, f.xfn = nil, nil, nil, nil, nil, nil
	f.kind, f.flags, f.st = 0, 0, stFree
	e.stats.FramesLive--
	f.next = e.free
	e.free = f
	if e.stats.FramesFree++; e.stats.FramesFree > trimFloor && !e.trim.armed {
		e.armTrim()
	}
}

// exec runs a queued frame and decides what follows from how its callback
// returned.
func (e *engine) exec(f *Steps) {
	fl := f.fl
	f.setStatus(stRunning)
	switch f.kind {
	case kStep:
		e.cur = f
		f.fn(f)
		f = e.cur // as in run: EnterSub may have entered a sub-step
		e.cur = nil
	case kBody:
		e.cur = f
		f.parent.loop().call(f)
		e.cur = nil
	case kLoop:
		e.loopNext(f)
		return
	case kParallel:
		e.startParallel(f)
		return
	case kSuccess:
		if fl.owned {
			fl.dropArgs(nil) // SuccessStep's values are never owned
		}
		fl.args = *(*Args)(f.x)
		fl.narrow = false
		fl.action = actDone
		return
	}
	if e.raised.kind != raiseNone {
		// The callback recovered our panic itself; the raise still stands.
		e.settle(f)
		return
	}
	e.afterCallback(f)
}

// afterCallback applies FTN12 2.1's rules to a callback that returned.
func (e *engine) afterCallback(f *Steps) {
	if e.yieldCanceled(f) {
		return
	}
	fl := f.fl
	switch {
	case f.flags&fSucceeded != 0:
		fl.action = actDone
	case f.qlast != nil:
		f.setStatus(stActive)
		if f.ctl.Load()&xMask != xNone {
			// Sub-steps decide how it ends: its External goes stale, so
			// one flow never has two steps waiting on its mailbox. A
			// result an External already delivered from another
			// goroutine is not dropped: it ends the step as it would on
			// the loop (an error fails it; a success after Add is a misuse).
			if f.disarm() {
				fl := f.fl
				code, info, err := fl.xcode, fl.xinfo, fl.xerr
				fl.clearMailbox()
				if code == "" {
					code, info, err = InternalError, "External: step completed after sub-steps were added", nil
				}
				e.setError(f, code, info, err)
				e.unwind(f, code)
				return
			}
		}
		if f.flags&fForward == 0 {
			if fl.owned {
				fl.dropArgs(nil)
			}
			fl.resetArgs()
		}
		fl.cur = f.dequeue()
		fl.action = actExec
	case f.flags&(fWait|fTimeout) != 0 || f.oncancel != nil && f.flags&fFinally == 0:
		f.setStatus(stWaiting)
		fl.action = actNone
	default:
		// Implicit success (spec 1.6).
		if fl.owned {
			fl.dropArgs(nil)
		}
		fl.resetArgs()
		fl.action = actDone
	}
}

// settle handles what a callback of f raised (Error, Break, Continue or a
// misuse) once the callback is gone from the stack.
func (e *engine) settle(f *Steps) {
	r := e.raised
	e.raised = raise{}
	if e.yieldCanceled(f) {
		return // the callback had canceled its own root: no Break, Continue or error handler runs
	}
	switch r.kind {
	case raiseError:
		e.unwind(f, r.code)
	case raiseBreak, raiseContinue:
		e.loopControl(f, r)
	}
}

// advance moves fl past fl.cur, which completed successfully, to the next
// frame to run; or suspends, or ends the flow.
func (e *engine) advance(fl *flow) {
	f := fl.cur
	for {
		if f.flags&(fFinally|fLocked) != 0 {
			e.completed(f) // its finally handler runs now, then its Lock's Leave
		}
		if f == fl.top {
			if fl.par != nil {
				e.branchDone(fl)
			} else {
				e.finishRoot(fl.root, "")
			}
			return
		}
		p := f.parent
		if p.kind == kLoop {
			// f is an iteration of p.
			if e.reuseIteration(fl, f, p) {
				return
			}
			e.releaseFrame(f) // with the frames it keeps (dropKept)
			p.loop().i++
			e.loopNext(p)
			return
		}
		if f.qlast == nil && (f.flags&fBare != 0 || f.oncancel == nil) && f.fl != nil && !f.timed() && f.ctl.Load()&xMask == xNone {
			// A step that waited and was completed (its External spent):
			// nothing queued, armed or timed is left, so releasePlain
			// undoes all it can hold, or the iteration keeps it.
			if p.kind == kBody && f.kind == kStep && f.keepable() {
				p.keep(f)
			} else {
				e.releasePlain(f)
			}
		} else {
			e.releaseFrame(f)
		}
		if c := p.dequeue(); c != nil {
			c.fl = fl // a root-level step built before the start has none yet
			fl.cur = c
			fl.action = actExec
			return
		}
		// p's sub-steps are all done: p completes with the last one's values.
		f = p
		fl.cur = p
	}
}
