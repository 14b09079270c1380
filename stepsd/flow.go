package stepsd

import (
	"math/bits"

	"github.com/asyncsteps/asyncsteps/engine"
)

// flow is one root flow and the requests it runs, one after another in
// arrival order: all the requests of one read, or one request split off
// (split) when the read's flow had to wait. Pooled per shard with its
// root; loop-owned.
//
// Why a flow per read and not per request: a root's start, run and end
// cost about 640 instructions (profiles/notes/2026-11-27-stepsd-round4.md),
// paid once per read of a pipeline instead of once per request. Each
// request keeps its own step, the Limiter's section, its own reply and its
// own error (serveError answers it and recovers, so the flow goes on to
// the next): a flow per read changes what the engine sees, not what a
// client does. What keeps that true is split: a flow never holds a request
// that has not reached the Limiter behind one that waits.
//
// The requests' steps are added to the root when the flow starts, one
// frame per request, with nothing around them. A step finds its request
// through the flow: its step (flow.exec) takes next when its section is entered (once,
// at once or after the Limiter's queue), serveError takes it when the
// section was refused at its entry, and cur is the request whose section
// ran last.
type flow struct {
	root  *engine.Steps
	sh    *shard
	cur   *request     // the request whose step ran last
	next  *request     // the next request whose step runs; nil when none is left
	last  *request     // its last request: the requests from next to last are consecutive in the connection's queue
	n     int          // requests of this flow not yet given back to the pool
	name  *engine.Name // its requests' command, or PIPELINE
	named *engine.Name // the name its root carries (SetFlowName only when it changes)
	free  *flow        // in the shard's free list
	// exec and onError are its step (execStepOf) and serveError bound to this flow,
	// made once with it (pooled with it): a step finds its flow without
	// asking the engine for the root's State (flowOf: about 35
	// instructions a request, profiles/notes/2026-11-27-glue2-round5.md).
	exec    engine.ExecFunc
	onError engine.ErrorFunc
	// run and onRunError are its run step (runStepOf) and runError, made
	// once with it like exec. runEnd is the last request the run step
	// answers, from next on (bad ones among them); runHeld: the run holds
	// the Limiter (TryEnterRun) until the run step leaves it.
	run        engine.ExecFunc
	onRunError engine.ErrorFunc
	runEnd     *request
	runHeld    bool
	// A direct run (startDirect): the first dn requests of the shard's
	// reqs, answered by its step (runDirectOf) with no request object;
	// dat is the next it answers, dcn their connection.
	direct        engine.ExecFunc
	onDirectError engine.ErrorFunc
	dn, dat       int
	dcn           *conn
	// atOnce: its root's X.DeferStart is off, as runWhole leaves it
	// (Execute may run the flow at once); newFlow turns it back on.
	atOnce bool
	// dcmd: the counters' index of every request of the direct run when
	// they are all one command (not refused), else -1: the run step then
	// counts them once, after its loop, instead of one by one. dfrom is
	// the first request the run step's current call answers (directError
	// counts those it had not).
	dcmd, dfrom int
}

// pipelineName names a flow whose requests are not all of one command.
var pipelineName = engine.NewName("PIPELINE")

// newFlow takes a pooled flow whose root has ended, or makes one, for the
// general read path (readAll, split): its root is held back.
func (sh *shard) newFlow() *flow {
	fl := sh.takeFlow()
	if fl.atOnce {
		// A read's flows are started, split and then run together by
		// runNow (engine.RunReady), which writes what they left: an
		// Execute must not run them one by one before that
		// (engine.X.DeferStart). Only a flow runWhole used last has it
		// off: a test here, a call when the two paths alternate.
		engine.X.DeferStart(fl.root, true)
		fl.atOnce = false
	}
	return fl
}

// wholeFlow takes a pooled flow whose root has ended, or makes one, for
// runWhole: its root is not held back. A whole read's flow is alone (its
// connection has nothing in flight, OnData), has no request object and is
// never split, so nothing of runNow's bookkeeping has to come between its
// Execute and its run. Kept off while the flow is pooled (newFlow turns it
// on again for the general path).
func (sh *shard) wholeFlow() *flow {
	fl := sh.takeFlow()
	if !fl.atOnce {
		engine.X.DeferStart(fl.root, false)
		fl.atOnce = true
	}
	return fl
}

// takeFlow takes a pooled flow whose root has ended, or makes one (held
// back, as newFlow wants it), leaving its root's X.DeferStart as it is.
func (sh *shard) takeFlow() *flow {
	if fl := sh.freeFlows; fl != nil && !fl.root.Executing() {
		sh.freeFlows = fl.free
		fl.free = nil
		if sh.freeFlowN--; sh.freeFlowN < sh.freeFlowLow {
			sh.freeFlowLow = sh.freeFlowN
		}
		fl.cur, fl.next, fl.last = nil, nil, nil
		return fl
	}
	fl := &flow{sh: sh, root: engine.New(sh.r)}
	engine.X.DeferStart(fl.root, true) // newFlow's (atOnce false)
	fl.root.State().User = fl
	fl.exec = execStepOf(fl)
	fl.onError = fl.serveError
	fl.run = runStepOf(fl)
	fl.onRunError = fl.runError
	fl.direct = runDirectOf(fl)
	fl.onDirectError = fl.directError
	return fl
}

// add appends rq to fl: it runs after fl's earlier requests. fl must not
// have started yet; its steps are added when it starts (execute).
func (fl *flow) add(rq *request, name *engine.Name) {
	if fl.next == nil && fl.dn == 0 {
		fl.next = rq
		fl.name = name
	} else if fl.next == nil {
		fl.next = rq
		if fl.name != name {
			fl.name = pipelineName
		}
	} else if fl.name != name {
		fl.name = pipelineName
	}
	fl.last = rq
	rq.fl = fl
	fl.n++
}

// execute adds fl's steps, names its root after its requests' command
// (PIPELINE when they differ), so CPU profiles split by command as with a
// flow per request, and starts it.
//
// The steps: first, when the Limiter lets them in at once, one run step
// (runStepOf) for the requests at the head of the flow that are answered
// within a step (runnable); then, for each request after those, its own
// step: the Limiter's section (Limiter.Sync, execStepOf), or badStep for a
// request the parser refused. The run takes the Limiter for as many of
// its requests as each would have entered at once through its own section
// (Limiter.TryEnterRun: one concurrency slot, a rate entry each); the
// first request it could not take is the first with a section of its own,
// which then queues or is refused with DefenseRejected as itself, as
// every request after it may: what a client sees is what a step per
// request gives, at about a third of the engine's cost per request
// (profiles/notes/2026-11-27-limbatch-round6.md).
//
// run false (a flow split off by splitRest) adds no run: its request meets
// the Limiter in its section, in its turn.
func (fl *flow) execute(run bool) {
	if fl.named != fl.name {
		fl.root.SetFlowName(fl.name) // kept by the root from run to run
		fl.named = fl.name
	}
	rq := fl.next
	if fl.dn > 0 {
		// The direct run holds the Limiter until its step ends: the
		// requests after it each have their own section, entered after
		// that (a second run now could hold a second slot meanwhile).
		fl.root.Add(fl.direct, fl.onDirectError)
		if rq == nil {
			fl.root.Execute()
			return
		}
	} else if !run {
		// A split flow's request enters in its section, in order (see
		// splitRest).
	} else if k, end := fl.runnable(); k > 0 {
		if g := fl.sh.lim.TryEnterRun(k); g > 0 {
			if g < k {
				// The run ends at the g-th request that enters the
				// Limiter (the refused ones before it need no entry,
				// as badStep's).
				for end = rq; ; end = end.next {
					if end.bad == "" {
						if g--; g == 0 {
							break
						}
					}
				}
			}
			fl.runEnd, fl.runHeld = end, true
			fl.root.Add(fl.run, fl.onRunError)
			if end == fl.last {
				fl.root.Execute()
				return
			}
			rq = end.next
		}
	}
	for {
		if rq.bad != "" {
			fl.root.Add(badStep, fl.onError)
		} else {
			// The Limiter's section is the request's one step: no
			// step of its own around it
			// (profiles/notes/2026-11-27-stepsd-round3.md).
			// Limiter.Sync is what Steps.Sync would call; called
			// directly, a request skips the accessor's checks (a
			// pooled root of ours, never released, never foreign,
			// one ErrorFunc) and the call through the engine.Sync
			// interface.
			fl.sh.lim.Sync(fl.root, fl.exec, fl.onError)
		}
		if rq == fl.last {
			break
		}
		rq = rq.next
	}
	fl.root.Execute()
}

// runnable counts the Limiter entries a run step would need for the
// requests at the head of fl that it can answer within its callback, and
// returns the last of them: up to the first SLEEP (it waits), and, unless
// every key command of the connection before fl's first request has gone
// (keyedGone), up to the first key command (it would wait for its turn).
// Refused requests (bad) need no entry. k 0: no run.
func (fl *flow) runnable() (k int, end *request) {
	keyed := -1 // keyedGone, asked at the first key command
	for rq := fl.next; ; rq = rq.next {
		if rq.bad == "" {
			switch {
			case rq.op == OpSleep:
				return k, end
			case keyedOp(rq.op):
				if keyed < 0 {
					keyed = 0
					if rq.cn.keyedGone(fl.next) {
						keyed = 1
					}
				}
				if keyed == 0 {
					return k, end
				}
			}
			k++
			end = rq
		}
		if rq == fl.last {
			return k, end
		}
	}
}

// keyedGone reports whether every key command of cn before first has gone
// (applied, or answered otherwise) and none waits for its turn: then the
// key commands from first on, run in order, each go at once.
func (cn *conn) keyedGone(first *request) bool {
	if cn.turnWaits != 0 {
		return false
	}
	for rq := cn.cursor; rq != nil && rq != first; rq = rq.next {
		if rq.keyed() && !rq.dispatched && !rq.done {
			return false
		}
	}
	return true
}

// runStepOf returns fl's run step (flow.run): it answers fl's requests
// from next to runEnd, in order, inside the Limiter that execute's
// TryEnterRun let them into, each as its own section would (execStepOf's
// work for a request that does not wait), and leaves the Limiter. It walks
// the requests itself rather than through take: fl.cur is the one it is
// at, for runError.
func runStepOf(fl *flow) engine.ExecFunc {
	return func(as *engine.Steps) {
		end := fl.runEnd
		for rq := fl.next; ; rq = rq.next {
			fl.cur = rq
			switch {
			case rq.bad != "":
				rq.answerError(engine.InvalidRequest, rq.bad)
			case rq.op-OpEcho > opFirstData-1-OpEcho: // keyedOp, written out: this closure's body, compiled apart from runStepOf, which is inlined, did not inline the call
				// Its turn, by runnable's keyedGone: every earlier key
				// command has gone, the earlier ones of this run in
				// order. The cursor may still be at a request before
				// it that has no key command (dispatchKeyed skips
				// those).
				cn := rq.cn
				if cn.turnWaits != 0 {
					// Never expected (keyedGone held when the run
					// was made); answered rather than applied out of
					// order, and counted.
					rq.sh.strays++
					rq.answerError(engine.InternalError, "stepsd: a key command of a run found another waiting for its turn")
					break
				}
				rq.dispatched = true
				cn.cursor = rq.next
				rq.sh.s.keys.apply(rq, &rq.sh.held)
				rq.answered()
			default:
				rq.answered()
			}
			if rq == end {
				break
			}
		}
		fl.endRun(end)
	}
}

// endRun moves fl past its run, which ended at end, and leaves the
// Limiter.
func (fl *flow) endRun(end *request) {
	if end == fl.last {
		fl.next = nil
	} else {
		fl.next = end.next
	}
	fl.runEnd = nil
	fl.runHeld = false
	fl.sh.lim.LeaveRun()
}

// runError is the run step's error handler: never expected (a request's
// work panicked: InternalError). The request it failed at is answered
// with the error, as serveError answers a request whose section failed;
// the run then goes on with its next request, still inside the Limiter,
// so the requests after it are answered as they would have been (a step
// per request fails one request alone): in a loop added here whose
// iterations each run the rest in a step of their own (runLoop), at one
// depth however many fail, as directError's. After the run's last request
// the Limiter is left, and the flow goes on to the requests after the run.
func (fl *flow) runError(as *engine.Steps, code string) {
	if fl.runFailed(as, code) {
		as.Loop(runLoop)
	}
}

// runLoop is an iteration of the loop runError adds: the rest of the run
// in a step of its own, or the loop's end when the run has ended. A plain
// function, as directLoop.
func runLoop(as *engine.Steps) {
	fl := flowOf(as)
	if !fl.runHeld {
		as.Break()
	}
	as.Add(fl.run, runLoopError)
}

// runLoopError is the error handler of the step runLoop adds: as
// runError, and the iteration ends, so that the next one runs the rest.
func runLoopError(as *engine.Steps, code string) {
	if flowOf(as).runFailed(as, code) {
		as.Success()
	}
}

// runFailed answers the request a run step failed at and gives back a
// store lock the panic left held. It reports true when requests of the
// run are left (fl.next is the first); otherwise the run has ended: it
// left the Limiter here, and the step succeeded.
func (fl *flow) runFailed(as *engine.Steps, code string) bool {
	fl.sh.s.keys.unlockHeld(&fl.sh.held) // a panic inside the store's lock (stripe.lock)
	end := fl.runEnd
	if !fl.runHeld || end == nil {
		as.Success() // not expected: the run step failed after it ended
		return false
	}
	rq := fl.cur
	if rq == nil {
		rq = fl.next // failed before its first request (not expected)
	}
	if !rq.done {
		rq.answerError(code, as.State().ErrorInfo)
	}
	if rq != end {
		fl.next = rq.next
		return true
	}
	fl.endRun(end)
	as.Success()
	return false
}

// directly reports whether a parsed request may be answered by a direct
// run: framed (its words are the read's bytes, valid until OnData returns;
// an inline command's may be in the parser's scratch), refused by nobody,
// answered within a step (not SLEEP), and needing none of its words but
// Key, Value and Text (not a DEL of several keys, whose Args the next
// parse reuses; not QUIT, which closes; not OpConst, composed in the
// parser).
func directly(p *Request, framed bool) bool {
	if !framed {
		return false
	}
	if p.Bad != "" {
		// Refused: answered with its name (Args[0], the read's bytes),
		// kept in Key since the next parse reuses Args; Args is cleared
		// so that nothing reads another request's words through it
		// (cn.start, for one the run does not take).
		p.Key = p.Name()
		p.Args = nil
		return true
	}
	switch p.Op {
	case OpGet, OpSet, OpEcho, OpPing:
		return true
	case OpDel:
		return len(p.Args) == 2
	}
	return false
}

// startDirect ends the head of a read that OnData parsed into the shard's
// reqs (nd requests, each directly, on a connection with nothing in
// flight): as many as the Limiter let in at once (g of the ne that need an
// entry: OnData's TryEnterRun(ne)) become fl's
// direct run, answered by its first step straight from their parse, with
// no request object (runDirectOf); the others, from the first the Limiter
// could not take, become requests of fl (cn.start), each with its own
// section, so each is queued or refused as itself, in order. It returns
// the first request it started, or nil.
//
// Why: a request answered in a run needs its request object only to
// carry its reply to flush; the object's life (newRequest, start, flush's
// walk, recycle) was about 250 instructions a request at pipeline 16
// (profiles/notes/2026-11-27-limbatch-round6.md).
//
// The run's requests count in cn.inflight until runNow has sent their
// replies (sendDirect), so that a close asked meanwhile (a fatal parse
// error) waits for them, and MaxPipeline bounds a run as it bounds
// requests in flight.
//
// OnData counts what it needs as it parses (parseDirect): ne, the run's
// Limiter entries (refused requests need none), and name, its requests'
// command (PIPELINE when they differ). The run's requests are counted by
// command (started, ended) by the run step that answers them; those
// started here as request objects by start.
func (fl *flow) startDirect(cn *conn, nd, ne, g int, cmds uint32, now int64) *request {
	sh := fl.sh
	e := nd // the run's requests: sh.reqs[:e]
	switch {
	case g == 0:
		e = 0
	case g < ne:
		// Up to the g-th that enters the Limiter, with the refused
		// ones before it.
		e = 0
		for left := g; left > 0; e++ {
			if sh.reqs[e].Bad == "" {
				left--
			}
		}
	}
	if e > 0 {
		fl.dn, fl.dat, fl.dcn, fl.runHeld = e, 0, cn, true
		fl.name = directName(cmds)
		fl.dcmd = -1
		if cmds&(cmds-1) == 0 && cmds != 1<<cmdInvalid {
			fl.dcmd = bits.TrailingZeros32(cmds)
		}
		cn.inflight += e
	}
	var first *request
	for i := e; i < nd; i++ {
		rq := cn.start(&sh.reqs[i], true, fl, now)
		if first == nil {
			first = rq
		}
	}
	return first
}

// runWhole answers a read that its direct head took whole (parseDirect:
// nd requests, nothing left to parse), each of them let into the Limiter
// (OnData's TryEnterRun granted all ne entries): what a pipelining
// client's read is. It does what startDirect, execute and runNow do for
// that read, in one frame: a flow whose one step is the direct run, named
// after cmds, started and run at once, its replies written in one write.
//
// Why a frame of its own: the general path's calls and tests for what
// this read cannot have (request objects, a partial grant, a request
// after the head, readRest) were about 110 instructions and 16 lines of
// hot code a read (profiles/notes/2026-11-27-srv-round9.md).
func (cn *conn) runWhole(nd int, cmds uint32) {
	sh := cn.sh
	fl := sh.whole // the flow the last whole read ran in, kept apart from the pool
	if fl == nil {
		fl = sh.wholeFlow()
	}
	sh.whole = nil // until the run ends as expected (a fallback's flow goes the general way)
	fl.dn, fl.dat, fl.dcn, fl.runHeld = nd, 0, cn, true
	// directName and startDirect's dcmd, with their one-command test
	// taken once.
	name, dcmd := pipelineName, -1
	if cmds&(cmds-1) == 0 {
		c := bits.TrailingZeros32(cmds)
		name = cmdNames[c]
		if c != cmdInvalid {
			dcmd = c
		}
	}
	fl.name, fl.dcmd = name, dcmd
	cn.inflight += nd
	if fl.named != name {
		fl.root.SetFlowName(name) // kept by the root from run to run (execute)
		fl.named = name
	}
	fl.root.Add(fl.direct, fl.onDirectError)
	// Set before Execute: as in runNow, for everything the run does
	// (its one step answers every request, or directError does).
	sh.inline = cn
	// On the loop, outside any step, with no flow ready ahead: Execute
	// runs the flow's first turn before it returns (engine's runStarted),
	// which is all of it, one step and no wait. With a flow ready ahead
	// (a flow another read left queued, one a timer or the Limiter
	// readied), it queues fl behind them, and RunReady runs them all, fl
	// last, as before: fl.dat is then still 0 < nd. Flows fl's run
	// readied (a Limiter waiter it let in, never one of cn's: cn had
	// nothing in flight) run in the loop's pass after this callback.
	fl.root.Execute()
	if fl.dat != nd {
		// Queued behind a ready flow (TestWholeReadQueuedBehindAReadyFlow).
		sh.wholeQueued++
		engine.RunReady(sh.r)
	}
	if fl.dat != nd || sh.held != 0 || cn.closed || fl.root.Executing() {
		// runNow's general end (wholeFallback). Reached only by a run
		// the engine's turn budget cut twice (Execute's turn,
		// RunReady's): more than 4,096 of its requests panicked in the
		// store, each two steps of directError's loop
		// (TestWholeReadCutByTheTurnBudget). A root still running
		// there is why the flow is not kept for the next read.
		// The others cannot hold today: the store's lock is held only
		// inside a step's synchronous call, and every step's error
		// handler (directError, and serveError and runError for the
		// flows RunReady ran ahead) gives it back; the run's writes
		// (directChunk's Write) never fail synchronously, and no flow
		// of another connection writes to cn, so nothing closes cn
		// inside the run. Kept for a change that makes them possible.
		cn.wholeFallback(fl, nd)
		return
	}
	sh.inline = nil
	clearSlots(sh, nd) // the run has read them: as readAll's end
	// sendDirect's work, for a run that answered every request of fl.
	if len(sh.dout) > 0 {
		_, _ = cn.c.Send(sh.dout)
	}
	sh.dout = sh.dout[:0]
	cn.inflight -= nd
	fl.dn, fl.dat, fl.dcn = 0, 0, nil
	sh.whole = fl // no request of its own: its run was all of it
	if cn.head != nil || cn.paused || cn.closing || cn.eof {
		// Never true today (no test reaches it): OnData took this path
		// with cn.head nil and cn.closing false; paused is set only by
		// readRest, and the flush that emptied cn.head resumed reading;
		// netio calls no OnData after OnEOF (netio/doc.go); and nothing
		// the run or the flows RunReady ran ahead does starts a request
		// of cn or closes it gracefully (a write that fails, the Send
		// above included, ends cn in OnClose: closed, which flush
		// needs not). Kept as afterRun's: flush resumes reading or
		// closes, should a change make one of them true here.
		cn.flush(sh.r.CoarseNow())
	}
}

// wholeFallback is runWhole's end for a run that did not answer every
// request (never expected) or whose connection closed meanwhile: runNow's
// general end, then the slots cleared. Not inlined: runWhole's frame keeps
// only the code a whole read runs.
//
//go:noinline
func (cn *conn) wholeFallback(fl *flow, nd int) {
	sh := cn.sh
	cn.afterRun(nil, fl, sh.r.CoarseNow())
	clearSlots(sh, nd)
}

// clearSlots is readAll's end for a read runWhole took: the slots it used,
// the first nd, are zeroed (the next direct head parses into zeroed slots,
// and no reference to the read's bytes is kept), and the flag parseDirect
// set dropped.
func clearSlots(sh *shard, nd int) {
	zeroSlots(sh.reqs[:nd])
	sh.reqsDirty = false
}

// zeroSlots zeroes reqs slot by slot: the write-barrier test and eight
// 16-byte stores a slot, inline. clear(reqs) (and the range loop that
// assigns Request{}, which the compiler turns into the same call) calls
// runtime.memclrHasPointers, which calls bulkBarrierPreWrite, then the
// clear: about 38 instructions and two more functions' lines for a read of
// one request, against 12 (profiles/notes/2026-11-28-srv3-round10.md).
// The pointer taken in the loop is what keeps the compiler from
// recognising the idiom.
//
// Safe for the GC: *p = Request{} is a typed store the compiler guards
// like any other, not a raw clear. While the GC marks
// (runtime.writeBarrier set) it calls runtime.wbZero, which shades the
// slot's old pointers (the deletion half of Go's hybrid barrier: a buffer
// whose last heap reference this store drops, while a goroutine's stack
// the mark scanned already holds it, stays marked), before the stores;
// the test, the call and the stores are one non-preemptible sequence (go
// build -gcflags=-S shows CMPL runtime.writeBarrier, CALL runtime.wbZero). Only the unmarked case skips the call, as
// memclrHasPointers' bulkBarrierPreWrite returns at once then. Should a
// later compiler recognise the loop, it calls memclrHasPointers again:
// slower, still correct.
func zeroSlots(reqs []Request) {
	for i := range reqs {
		p := &reqs[i]
		*p = Request{}
	}
}

// runDirectOf returns fl's direct run step (flow.direct): it answers the
// run's requests in order, inside the Limiter startDirect let them into,
// appending their replies to the shard's dout (sent by runNow before
// flush's), and leaves the Limiter. Each is counted by command as started
// (it was read in this OnData: nothing reads the counters in between, they
// are the loop's) and ended, as a request's start and flush count it.
func runDirectOf(fl *flow) engine.ExecFunc {
	return func(as *engine.Steps) {
		sh := fl.sh
		reqs := sh.reqs[:fl.dn]
		i := fl.dat
		fl.dfrom = i
		out := sh.dout
		if c := fl.dcmd; c >= 0 {
			// One command: the loop keeps less across its calls, and
			// the counters are added to once.
			for ; i < len(reqs); i++ {
				p := &reqs[i]
				fl.dat = i + 1 // directError's request, should this one panic
				if c == int(OpEcho) || c == int(OpPing) {
					out = appendReply(out, p.Op, p.Text, nil, 0)
				} else {
					out = sh.applyTo(p, out)
				}
				if len(out) >= outChunk {
					out = fl.directChunk(out)
				}
				sh.dout = out // directError appends after the replies before its request
			}
			cc := &sh.cmds[c]
			cc.started += uint64(i - fl.dfrom)
			cc.ended += uint64(i - fl.dfrom) // their life is 0: answered in the read that brought them
		} else {
			for ; i < len(reqs); i++ {
				p := &reqs[i]
				fl.dat = i + 1
				c := cmdInvalid
				switch {
				case p.Bad != "":
					out = AppendBad(out, p.Bad, p.Key)
					sh.cmds[cmdInvalid].failed++
				case p.Op == OpEcho || p.Op == OpPing:
					out = appendReply(out, p.Op, p.Text, nil, 0)
					c = int(p.Op)
				default:
					out = sh.applyTo(p, out)
					c = int(p.Op)
				}
				cc := &sh.cmds[c]
				cc.started++
				cc.ended++
				if len(out) >= outChunk {
					out = fl.directChunk(out)
				}
				sh.dout = out
			}
		}
		fl.runHeld = false
		sh.lim.LeaveRun()
	}
}

// directChunk queues a direct run's replies gathered so far when they
// reach outChunk, so that the scratch stays small as flush's: the run's
// replies are the first of its connection. Queued, not sent (Write, not
// Send): a write that fails ends the connection there and then (OnClose),
// and netio gives back the read's bytes, which this run's requests and
// those after it still read. sendDirect writes them.
func (fl *flow) directChunk(out []byte) []byte {
	if fl.dcn.closed {
		return out
	}
	_, _ = fl.dcn.c.Write(out)
	return out[:0]
}

// directError is the direct run step's error handler: never expected (a
// request's work panicked: InternalError). The request it failed at is
// answered with the error, as serveError answers a request's, and the run
// goes on after it, still inside the Limiter, in a loop added here whose
// iterations each run the rest in a step of their own (directLoop), until
// the run ends.
//
// Why a loop, not the rest as a step added here: a step added by a
// handler is a child of the failed step, so each failure of a read went
// one frame deeper, and each panic's error walked every frame down to it
// (the AsyncStack, captureStack): the k-th failure of a read cost k, the
// read's failures quadratic in their number (bounded by MaxPipeline, but
// a user may raise it; profiles/notes/2026-11-28-review-bugs2-round10.md).
// In the loop every failure is as deep as the second (root, the failed run
// step, the loop, its iteration, the iteration's step:
// TestDirectRunPanicsKeepDepth). It costs a failure one step more (the
// iteration's, against the engine's turn budget) and the read's last
// failure a Break; a run that does not fail adds nothing.
func (fl *flow) directError(as *engine.Steps, code string) {
	if !fl.directFailed(as, code) {
		return
	}
	as.Loop(directLoop)
}

// directLoop is an iteration of the loop directError adds: the rest of the
// run in a step of its own, or the loop's end when the run has ended (its
// step answered the last request, or directLoopError did). It and its
// handler are plain functions that find their flow through the root's
// State (flowOf), not funcs bound to the flow as exec is: only a run that
// failed pays for that, and a pooled flow keeps no more than before.
func directLoop(as *engine.Steps) {
	fl := flowOf(as)
	if !fl.runHeld {
		as.Break()
	}
	as.Add(fl.direct, directLoopError)
}

// directLoopError is the error handler of the step directLoop adds: as
// directError, the failed request answered, and the iteration ends, so that
// the next one runs the rest at the same depth.
func directLoopError(as *engine.Steps, code string) {
	if flowOf(as).directFailed(as, code) {
		as.Success()
	}
}

// directFailed answers the request a direct run step failed at (fl.dat-1)
// with the error, gives back a store lock the panic left held and counts
// the request. It reports true when requests of the run are left: the
// handler then goes on with them. Otherwise (the failed request was the
// run's last, or the failure was not inside the run) the run has ended:
// it left the Limiter here, and the step succeeded.
func (fl *flow) directFailed(as *engine.Steps, code string) bool {
	sh := fl.sh
	sh.s.keys.unlockHeld(&sh.held) // a panic inside the store's lock (stripe.lock)
	if !fl.runHeld || fl.dat == 0 {
		as.Success() // not expected: failed after the run ended, or before its first request
		return false
	}
	p := &sh.reqs[fl.dat-1]
	ci := cmdIndex(p.Op, p.Bad)
	c := &sh.cmds[ci]
	if ci == fl.dcmd {
		// The run step counts a run of one command after its loop:
		// those it answered before this one are counted here.
		c.started += uint64(fl.dat - 1 - fl.dfrom)
		c.ended += uint64(fl.dat - 1 - fl.dfrom)
	}
	c.started++ // the run step counts a request after its work
	c.ended++
	c.failed++
	sh.dout = AppendError(sh.dout, code, as.State().ErrorInfo)
	if fl.dat < fl.dn {
		return true
	}
	fl.runHeld = false
	sh.lim.LeaveRun()
	as.Success()
	return false
}

// sendDirect writes fl's direct run's replies, which come before those of
// every request of cn started after them, and lets the run's requests go
// from cn.inflight. A flow with no request left (all of its read answered
// by the run) goes back to the pool here: no request's recycle will.
func (fl *flow) sendDirect() {
	sh, cn := fl.sh, fl.dcn
	if fl.dat < fl.dn {
		// Never expected (the run step runs in runNow's RunReady, its
		// flow's first step): the rest would read bytes OnData gives
		// back. Counted; their replies never come, so cn is closed.
		sh.strays++
		for i := fl.dat; i < fl.dn; i++ {
			p := &sh.reqs[i]
			sh.cmds[cmdIndex(p.Op, p.Bad)].started++ // read, never answered
		}
		_ = cn.c.Close()
	}
	if len(sh.dout) > 0 && !cn.closed {
		_, _ = cn.c.Send(sh.dout)
	}
	sh.dout = sh.dout[:0]
	cn.inflight -= fl.dn
	fl.dn, fl.dat, fl.dcn = 0, 0, nil
	if fl.n == 0 {
		sh.recycleFlow(fl)
	}
}

// take moves on to the flow's next request, whose step starts; nil if it
// has none (never expected: see strayStep).
func (fl *flow) take() *request {
	rq := fl.next
	if rq == nil {
		return nil
	}
	if rq == fl.last {
		fl.next = nil
	} else {
		fl.next = rq.next
	}
	fl.cur = rq
	return rq
}

// flowOf is the flow whose step as is (or is inside of).
func flowOf(as *engine.Steps) *flow { return as.State().User.(*flow) }

// splitRest gives each request of fl behind the one it waits at a flow of
// its own, and starts them, in order. runNow calls it once fl has run as
// far as it could: if a request waits (in the Limiter's queue, a SLEEP, a
// key command waiting for its turn) with requests behind it, those then do
// not wait behind it, and each enters the Limiter (or is answered) at
// once, as it did with a flow per request: under overload a read's later
// requests are queued or refused with DefenseRejected as themselves,
// never held back unseen by the Limiter. fl then ends after the request
// it waits at: the steps it had for the requests split off are dropped
// (engine.X.DropQueued), so it ends as that request's step does, a
// success once it is answered, and the engine counts no failure for a
// split (TestSplitReadFlowsSucceed).
//
// One flow each, not one flow for the rest: that flow might wait in its
// turn and be split again, and a read of n SLEEPs would add n²/2 steps.
func (fl *flow) splitRest() {
	p := fl.cur // the request fl waits at: the one whose section runs, or the next, queued
	if p == nil || p.done {
		p = fl.next
	}
	if p == nil || p == fl.last {
		return // no request behind it
	}
	rq, last := p.next, fl.last
	fl.last = p
	if fl.next != p {
		fl.next = nil // p's section runs: no step of fl takes another request
	}
	moved := 0
	for {
		next := rq.next
		fl.n-- // p is left: fl.n stays above 0
		nf := fl.sh.newFlow()
		nf.add(rq, cmdNames[rq.cmd])
		// No run: a run takes its slot now, when it starts, while the
		// sections of the flows split off before it enter only when
		// they run (RunReady, in order); a later request would enter
		// ahead of an earlier one, which could then be refused in its
		// place (TestSplitFlowsEnterInOrder).
		nf.execute(false)
		moved++
		if rq == last {
			break
		}
		rq = next
	}
	// fl's steps not yet started are exactly those of the requests moved:
	// p's has started (it waits, or runs next: the engine takes a step off
	// its parent's queue before the turn budget can stop it there).
	if engine.X.DropQueued(fl.root) != moved {
		fl.sh.strays++ // never expected: the tests check strays
	}
}

// badStep answers a request the parser refused: InvalidRequest, without
// the Limiter, as before.
func badStep(as *engine.Steps) {
	rq := flowOf(as).take()
	if rq == nil {
		strayStep(as)
		return
	}
	rq.answerError(engine.InvalidRequest, rq.bad)
	if rq.cn.cursor == rq {
		rq.cn.dispatchKeyed(nil, nil)
	}
}

// strayStep is what a step with no request left does: nothing. A split
// flow's steps after its last request are dropped (splitRest), so none
// is expected; were one to run (a mistake here), or splitRest to drop
// other than the steps of the requests it moved, it is counted
// (shard.strays, which the tests check), and the step touches no other
// request.
func strayStep(as *engine.Steps) {
	flowOf(as).sh.strays++
}

// recycleFlow returns fl to the pool once none of its requests is left.
// Its root may still be ending (a canceled flow): newFlow takes it only
// once it no longer executes.
func (sh *shard) recycleFlow(fl *flow) {
	fl.free = sh.freeFlows
	sh.freeFlows = fl
	sh.freeFlowN++
}
