package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/prefetch"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// root is a root AsyncSteps object: the *Steps handed to the user is its
// first field, so a root frame converts to its root by pointer cast.
type root struct {
	Steps // Steps.e is the root's engine, fixed for the life of the memory
	state State
	// Steps.fl is the root's own flow while it runs, from prepareStart to
	// the end of the run, and nil otherwise: flows are pooled by the loop
	// (attachFlow, detachFlow), so a root that is never Released leaves
	// only its own small struct to the GC. Frames built before the start
	// carry a nil fl, set when they are dequeued to run. (The root is
	// kept small for the same reason: 288 bytes, one size class.)

	// Padding, so that spare falls at 224 (below) with everything else a
	// flow touches after it: the 62 bytes from spare to extKept then lie
	// on one cache line when the 288-byte class places the root at offset
	// 32 of a line, and on two at offset 0 (TestRootFlagsBesideLease).
	_ [16]byte

	// spare holds frames this root's flows gave back (spareN of at most
	// spareCap, below), so that building the root again off the loop
	// takes frames without a lock. Owned by the loop while running, by
	// the holder otherwise. It sits at offset 224, before run, so that
	// spare, run, more and the spare counts fill 32 bytes from a multiple
	// of 32 (the embedded Steps is 128 bytes, the State 80, then 16 of
	// padding).
	spare *Steps

	// run, more and spareN/spareCap are neighbours at a 32-byte boundary:
	// RunReady reads the first two for every flow it runs (the cancel
	// test, the label) and the step path the last for every step that
	// ends, and a round over many parked flows has evicted the root, so
	// they should cost one cache line, not two, wherever the 288-byte size
	// class places the root (root_alloc_test.go checks the offsets).
	//
	// run is execGen<<runGenShift | runCancel | runActive: runActive
	// between Execute and the end of the flow; runCancel from the moment a
	// Cancel of this run is asked until the run ends, so that the loop
	// applies no outcome already queued for the flow (a timeout, an
	// External's result, a Sync hand-over) once the cancel is asked, even
	// before the posted cancelRoot arrives (RunReady); execGen bumped by
	// each Execute, so a Cancel or a start aimed at an earlier run is
	// ignored. One word: one locked instruction to start a run, one to end
	// it, one load for RunReady to check.
	run atomic.Uint64
	// more holds what few roots use (a Promise, OnEnd, a name, a context,
	// a trace task, a misuse while building), allocated the first time one
	// is set and kept by a pooled root: a plain root is one size class
	// smaller without them. Written by the holder while the root is not
	// running, or by the loop while it runs (a trace task), one writer at a
	// time; atomic because FlowName and Context may read it from the
	// holder while the loop adds the trace task.
	more atomic.Pointer[rootExt]
	// spareN, spareCap: the count of spare (below) and its bound, tested
	// by the step path each time a step ends (advanceFast's toSpare).
	spareN, spareCap int32

	// lease is the root's lease count, shifted left by one, with
	// leaseReleased from Release until New hands the root out again:
	// Release bumps the count and sets the bit in one release-only store,
	// New clears the bit. A Ref taken under an earlier lease (or while the
	// root was released) is stale and does nothing, like External's
	// generation. Atomic because a stale holder may ask (Valid, Cancel)
	// from another goroutine while New runs. One word, so that a release
	// is one store and a Ref's test one load.
	lease atomic.Uint64
	// releaseAtEnd: Release was called while the flow ran. The owner sets
	// it then rechecks running; finishRoot clears running then checks it;
	// whoever Swaps it back to false releases, so exactly one does.
	releaseAtEnd atomic.Bool

	built, created int32 // frames taken/allocated while building, handed to the loop's counters at start

	// The flag bytes below sit after lease, releaseAtEnd and the build
	// counts, on lease's line wherever the 288-byte class places the root,
	// and on run's too at offset 32 of a line (their old place, after
	// State, was then a line of its own): New, the run's end and Release
	// each read or write them beside run or lease, and New's prefetch of
	// the spare line brings them at offset 32 (TestRootFlagsBesideLease).

	// keepFlow: the root came from the pool (its holders Release roots),
	// so detachFlow leaves its flow attached: giving it back at every end
	// and taking one at every start cost released roots 7-17 ns a run
	// (profiles/README.md). A root never released gives its flow back
	// after its first run and keeps it from its second on (a holder that
	// runs a root again reuses it as the pool does). Written by New before
	// the root is handed out, and by prepareStartSlow on the loop.
	keepFlow bool

	// Loop-owned: started is set when the flow really starts. A Cancel
	// that overtakes a start posted from another goroutine is honoured by
	// that start (runCancel).
	started bool
	// stateUsed: the root's State was handed out (State, and so Get, Set,
	// Clone, the C ABI's stateVariable) or written by the engine (an
	// error, a cancel's panic, a closed reactor) at least once in the
	// life of the memory. Until then the State is all zero and nobody
	// holds a pointer to it, so New and Release skip its reset: most
	// flows never touch their State, and the two resets were ~20
	// instructions of Simple. Sticky: a *State handed out once may be
	// written through at any later time (a holder keeps it across runs,
	// or past Release), so a root that ever gave it out resets it at every
	// New and Release, as every root did before. Set with a load first, so
	// that a root that uses its State pays one load per use, not a locked
	// store; atomic because the holder (State from any goroutine) and the
	// loop (an error) may both set it.
	stateUsed atomic.Bool
	// argsClear: the run that ended last left its kept flow holding no
	// values, none owned (endRunClear), so Release reads nothing of the
	// flow. Written at every end (endRun, endRunClear) by whoever ends the
	// run (the loop; Execute's caller when a closed reactor refuses the
	// start), before the run word's store that orders it for the holder:
	// Release reads it only after it saw the run ended, and the next write
	// comes after the holder's next Execute, so a plain bool. A run that
	// ends any other way than finishRoot's plain end leaves it false, which
	// is always safe (Release then looks): TestArgsClearNeverStale.
	argsClear bool
	// extKept: more (below) may hold something a Release must clear: set
	// by extra, which every setter of the extension but Promise and Batch
	// calls (a name, a context, an OnEnd, DeferStart, a misuse, a trace
	// task), cleared by Release with the extension. A Promise's and a
	// Batch's fields are cleared by the run's end (endRunWaited; a
	// Batch's index and link are written before each use), so a root
	// that only ever had those skips the extension's zeroing, and its
	// two or three lines, at Release (FanOut: 1.8 D1 misses a flow).
	// Written by the holder, or by the loop during a run (a trace task),
	// as the extension itself. Set too when the root frame is given a
	// binding (xBind, the C ABI's), so that Release reads Steps.bin, on a
	// line of its own, only for such a root (FanOut: 1 D1 miss a flow).
	extKept bool
}

// rootExt is the rarely used part of a root (root.more).
type rootExt struct {
	promise *Promise
	onEnd   func(root *Steps, code string) // OnEnd's
	misuse  string                         // the first misuse made while building off the loop

	name    *Name           // SetName: the flow's pprof label, trace task and metrics (label.go)
	ctx     context.Context // SetContext: cancels and bounds each run (context.go)
	stopCtx func() bool     // the run's context watch; loop-owned while running
	trace   *traceTask      // the run's trace task while runtime/trace is on (label.go)
	startAt int64           // the run's start on the reactor's CoarseNow, for named flows (metrics.go)

	// A Batch's run (batch.go): the Batch, this root's entry, and the next
	// root of the chain its reactor's start task walks.
	batch     *Batch
	batchNext *root
	batchIdx  int32

	// deferStart: Execute on the loop queues the flow for the loop's
	// pass, never runs it at once (X.DeferStart). Kept from run to run.
	deferStart bool
}

// nameOnly reports whether x holds nothing a run's start or end must act
// on but its name (none of: a misuse, a context, its watch, a trace task,
// an OnEnd, a Promise, a Batch): such a run starts and ends on the short
// paths (prepareStart, finishRoot). Loop only.
func (x *rootExt) nameOnly() bool {
	return x.misuse == "" && x.ctx == nil && x.stopCtx == nil && x.trace == nil &&
		x.onEnd == nil && x.promise == nil && x.batch == nil
}

// startsPlain reports whether x holds nothing a run's start must act on
// but its name: what nameOnly asks, less what only the end reads (an
// OnEnd, a Promise, a Batch). Such a run starts on startNamedKept's short
// path; a Promise's or a Batch's root is one. Loop only.
func (x *rootExt) startsPlain() bool {
	return x.misuse == "" && x.ctx == nil && x.stopCtx == nil && x.trace == nil
}

// extra returns rt's rootExt, allocating it the first time, for a setter
// whose field Release must clear (extKept).
func (rt *root) extra() *rootExt {
	rt.extKept = true
	return rt.waitExt()
}

// waitExt is extra for a Promise's or a Batch's fields, which the run's
// end clears: Release need not.
func (rt *root) waitExt() *rootExt {
	x := rt.more.Load()
	if x == nil {
		x = new(rootExt)
		rt.more.Store(x)
	}
	return x
}

// setMisuse records the first misuse made while building rt off the loop.
func (rt *root) setMisuse(info string) {
	if x := rt.extra(); x.misuse == "" {
		x.misuse = info
	}
}

// name is the flow's name, or nil.
func (rt *root) name() *Name {
	if x := rt.more.Load(); x != nil {
		return x.name
	}
	return nil
}

func rootOf(f *Steps) *root { return (*root)(unsafe.Pointer(f)) }

// stateForWrite returns rt's State, marked used (stateUsed): every pointer
// to it that leaves the root, and every write the engine makes to it,
// goes through here.
func (rt *root) stateForWrite() *State {
	if !rt.stateUsed.Load() {
		rt.stateUsed.Store(true)
	}
	return &rt.state
}

// The bits of root.run.
const (
	runActive   = 1 // the flow runs: from Execute to its end
	runCancel   = 2 // a Cancel of this run was asked: no outcome is applied any more
	runGenShift = 2 // execGen's place
)

func (rt *root) running() bool    { return rt.run.Load()&runActive != 0 }
func (rt *root) isReleased() bool { return rt.lease.Load()&leaseReleased != 0 }

// The parts of root.lease.
const (
	leaseReleased = 1 // released: from Release until New hands the root out again
	leaseOne      = 2 // one lease in the count
)

func (rt *root) execGen() uint64 { return rt.run.Load() >> runGenShift }
func (rt *root) endRun() {
	rt.argsClear = false
	rt.run.Store(rt.run.Load() &^ (runActive | runCancel))
}

// endRunClear is endRun for finishRoot's plain end, which also records
// whether the kept flow fl is left holding no values: a goroutine
// releasing many roots in a row (a fan-out's end, the FanOut row) meets each
// flow cold, last written by the loop on another core, and Release's test
// of its values (three cache lines) was 60% of Release's samples; with
// argsClear set Release reads nothing of the flow. Here, on the loop, the
// flow has just been written. Only this end computes it (a flow ended by
// a completion from elsewhere, as a fan-out's are); advanceFast's copy of
// the plain end (Simple's) clears it, and Release then looks at the flow
// as before.
//
// With narrow set (slots 1-3 empty: an empty success leaves it so) only
// slot 0 is looked at: the flow's first line, which the completion just
// wrote, not its second.
func (rt *root) endRunClear(fl *flow) {
	rt.argsClear = !fl.owned && fl.args.v[0].meta == 0 && (fl.narrow || fl.args.empty())
	rt.run.Store(rt.run.Load() &^ (runActive | runCancel))
}

// endRunEmptied is endRun for a run whose end emptied its kept flow of
// values (endRunWaited): Release then reads nothing of the flow, as after
// endRunClear.
//
// The run word is given up with a release store (setRunEnded: a plain
// MOV on amd64), not endRun's XCHG (~20 cycles, one of the ~9 locked
// instructions of a FanOut flow): everything the end wrote before it is
// ordered before it, as the XCHG ordered it. The one order a MOV does not
// give, a later load seeing other goroutines' stores (releaseAfterRun's
// Dekker pair: it stores releaseAtEnd, then loads run; finishKeptExt
// clears run, then loads releaseAtEnd), comes from endRunWaited's own
// next step, always a locked instruction, before it returns: the
// Promise's Swap (p.end) or the Batch's count (batchEnded). Only
// endRunWaited calls this; a caller without such a step must use endRun.
//
// Both steps are owed even when the flow ends inside Promise's own direct
// start (startPromiseNow), where nobody else holds the Promise yet: a
// step may have handed the root to a goroutine that Releases it
// (TestPromiseDirectStartReleaseAtEndHandedOff; without the fence about
// one such root in a hundred was never released).
func (rt *root) endRunEmptied() {
	rt.argsClear = true
	rt.setRunEnded(rt.run.Load() &^ (runActive | runCancel))
}

// askCancel marks rt's run as canceled and reports the run's execGen, or
// false when rt does not run. Any goroutine; the caller posts cancelRoot.
func (rt *root) askCancel() (uint64, bool) {
	for {
		v := rt.run.Load()
		if v&runActive == 0 {
			return 0, false
		}
		if v&runCancel != 0 || rt.run.CompareAndSwap(v, v|runCancel) {
			return v >> runGenShift, true
		}
	}
}

// maxRootLocal bounds the loop's lock-free root list: roots released on the
// loop beyond it go to the shared list, where New off the loop finds them.
const maxRootLocal = 1024

// rootQuarantine is how many released roots a free list keeps before New
// reuses the oldest. A *Steps is a bare pointer, so a root kept past
// Release cannot be told from the next owner of the same memory; the free
// lists are FIFO and hold this many roots back, so a stale root's calls
// find it released (and do nothing) until that many more roots have been
// released after it. Ref is the exact, generation-checked way to cancel a
// root from a goroutine that may outlive its flow. Eight roots per list
// cost a few KiB and stay within the allocation tests' warm-up.
const rootQuarantine = 8

// nextFree is rt's successor in a free list. A root's own Steps.next is
// its link there: a root is never anyone's sub-step, so the field is free.
func (rt *root) nextFree() *root { return rootOf(rt.Steps.next) }

// rootList is a FIFO free list of roots.
type rootList struct {
	head, tail *root
	n          int
	low        int // the fewest roots it held since the last trim (trim.go)
}

func (l *rootList) push(rt *root) {
	rt.Steps.next = nil
	if l.tail == nil {
		l.head = rt
	} else {
		l.tail.Steps.next = &rt.Steps
	}
	l.tail = rt
	l.n++
}

// rootRing is the loop's FIFO of released roots (engine.rootLocal), a
// ring of pointers: a push is a store and an index bump, a pop a load, a
// clear and a bump, where the linked rootList writes a head, a tail and
// two links. It holds maxRootLocal roots; its free slots are nil, so that
// it pins no root it gave out.
type rootRing struct {
	buf        [maxRootLocal]*root
	head, tail uint // pop at head, push at tail: tail-head roots wait
	low        int  // the fewest roots it held since the last trim (trim.go)
}

// n is how many roots wait.
func (l *rootRing) n() int { return int(l.tail - l.head) }

// push appends rt; the caller checked n() < maxRootLocal.
func (l *rootRing) push(rt *root) {
	l.buf[l.tail%maxRootLocal] = rt
	l.tail++
}

// pop takes the oldest root once more than rootQuarantine wait, else nil.
func (l *rootRing) pop() *root {
	n := l.tail - l.head
	if n <= rootQuarantine {
		return nil
	}
	i := l.head % maxRootLocal
	rt := l.buf[i]
	l.buf[i] = nil
	l.head++
	if int(n-1) < l.low {
		l.low = int(n - 1)
	}
	return rt
}

// pop takes the oldest root once more than rootQuarantine wait, else nil.
func (l *rootList) pop() *root {
	if l.n <= rootQuarantine {
		return nil
	}
	rt := l.head
	l.head = rt.nextFree()
	if l.head == nil {
		l.tail = nil
	}
	rt.Steps.next = nil
	if l.n--; l.n < l.low {
		l.low = l.n
	}
	return rt
}

// prefetchDepth is the pool depth from which New prefetches: 64 pooled
// roots with their flows and frames are ~60 KB, what a core's L1 and L2
// keep of a goroutine's recent work; deeper pools come from fan-outs,
// whose roots a round has evicted.
const prefetchDepth = 64

// New's depth test stands for its rt != nil test too.
var _ [prefetchDepth - rootQuarantine]struct{}

// prefetchNext starts loading what the next two pops will touch, so that
// a goroutine starting many roots in a row (New, Add, Execute, ...; the
// FanOut row) does not meet each one cold, miss after dependent miss: a
// round over thousands of flows evicted them, or a loop on another core
// wrote them last (at 30,000 flows, New, the start's first tests and Add
// were a third of the starting goroutine's CPU samples, nearly all on
// such loads). A pipeline two deep: the root after next gets its first
// line (its link, read by the next pop) and the line of its spare and run
// words (New, Add, Execute); the next root, whose lines the previous call
// asked for and which have had a New's time to arrive, gets its kept
// flow's first and last lines (the start's tests: owned, held) and its
// spare frame (Add's). Reads only words the pool's lock guards (a pooled
// root's link, flow and spare are written by nobody until it is popped).
// Caller holds the pool's lock.
//
// Only for a pool deeper than prefetchDepth: a goroutine that starts one
// flow at a time and releases it (RealSimple, Call) keeps a pool of a few
// roots that stay in cache, and the ~70 instructions (RealSimple 1,328 ->
// 1,405 own Ir per op without this test) would buy it nothing. A loop
// starting many roots (the C++ shapes' Parallel) takes the prefetch too:
// +63 Ir per root there, but 13% less time (751 against 875 ns per flow,
// medians of 11 runs alternated;
// profiles/notes/2026-11-27-session24-tables.md).
func (l *rootList) prefetchNext() {
	n1 := l.head
	if n1 == nil {
		return
	}
	var n2, n2spare unsafe.Pointer
	if n := n1.Steps.next; n != nil {
		r2 := rootOf(n)
		n2, n2spare = unsafe.Pointer(r2), unsafe.Pointer(&r2.spare)
	}
	var fl0, flRun, flArgs3 unsafe.Pointer
	if fl := n1.Steps.fl; fl != nil {
		// The first line, not held's (the last): the start tests
		// holding there.
		fl0 = unsafe.Pointer(fl)
		// The start writes the run link (the flow's fourth line) and the
		// step reads root and top (its third, with the last slot); the
		// reset reads slot 0 alone when an empty success left the flow
		// narrow (setArgs), so the second line is not asked for.
		flRun, flArgs3 = unsafe.Pointer(&fl.nextRun), unsafe.Pointer(&fl.args.v[MaxArgs-1])
	}
	prefetch.Lines(n2, n2spare, fl0, nil)
	prefetch.Lines(unsafe.Pointer(n1.spare), flRun, flArgs3, nil)
}

// New returns a new root on r, not yet executed. Safe from any goroutine.
// Roots come from r's pool: Release gives one back, so create → execute →
// release allocates nothing once warm. A nil r panics, naming the call.
func New(r *reactor.Reactor) *Steps {
	if r == nil {
		newNil()
	}
	e, ok := reactor.X.Ext(r, extKey).(*engine) // engineOf's common case, inlined
	if !ok {
		e = engineOf(r)
	}
	onLoop := r.IsSameThread()
	if onLoop {
		// On the loop: a free list no other goroutine touches. A root
		// from it is handed out here, in a straight line (the tests
		// below all come out one way for it).
		if rt := e.rootLocal.pop(); rt != nil {
			e.stats.RootsLive++
			rt.keepFlow = true // see below
			rt.Steps.setStatus(stIdle)
			if rt.stateUsed.Load() {
				rt.state.reset() // see below
			}
			rt.setLease(rt.lease.Load() &^ leaseReleased)
			return &rt.Steps
		}
	}
	// From the shared pool (off the loop, or the loop's own list empty),
	// or a fresh root.
	var f *Steps // off the loop: a frame for the first step, if rt has none
	e.rootMu.Lock()
	rt := e.rootFree.pop()
	e.rootsLive++
	if !onLoop && (rt == nil || rt.spare == nil) {
		f, _ = e.takeBuild(1)
	}
	if e.rootFree.n > prefetchDepth { // so rt != nil: pop leaves nil only to a pool of rootQuarantine or fewer
		e.rootFree.prefetchNext()
	}
	e.rootMu.Unlock()
	if rt == nil {
		rt = &root{}
		rt.Steps.e = e
		rt.Steps.kind = kRoot // written once: a stale Cancel reads it from any goroutine
	} else {
		// A root that went through Release: its holder releases roots,
		// so it keeps a flow across runs, as the pools keep everything
		// else (detachFlow).
		rt.keepFlow = true
	}
	if f != nil {
		rt.spare, rt.spareN = f, 1 // rt had none
	}
	rt.Steps.setStatus(stIdle)
	// Reset again: a stale holder may have written to the state of the
	// released root (Set is not refused) while it waited in the pool.
	// Only a root whose State was ever handed out can have been written.
	if rt.stateUsed.Load() {
		rt.state.reset()
	}
	// A plain store on amd64 (setLease: no reader orders anything by the
	// word), not an XCHG: New reads nothing after it that another
	// goroutine's store must have reached first.
	rt.setLease(rt.lease.Load() &^ leaseReleased)
	return &rt.Steps
}

// buildChunk is the most frames a root being built off the loop allocates
// at once when it has no spare left (a fresh root takes 1, then 1, 2, 4...).
const buildChunk = 16

// buildFrame takes a frame for a step added to a root that is not running.
func (rt *root) buildFrame(kind uint8, parent *Steps) *Steps {
	f := rt.popSpare()
	if f == nil {
		f = rt.freshFrame(kind, parent)
	}
	rt.markBuilt(f, kind, parent)
	return f
}

// freshFrame takes a frame for a root being built that has no spare left.
func (rt *root) freshFrame(kind uint8, parent *Steps) *Steps {
	e := rt.e
	if e.r.IsSameThread() {
		// On the loop: from the loop's free list, so that a root executed
		// with more root-level steps than before allocates nothing. The
		// frame is counted as built, like a spare one, until the start.
		f := e.newFrame(kind, parent, nil)
		e.stats.FramesLive--
		return f
	}
	if f := rt.takeShared(); f != nil {
		return f
	}
	// Off the loop the free list is not ours, and the build pool is empty:
	// frames come in chunks that double with the root's size up to
	// buildChunk, the rest kept as spares, so a root that grows costs a
	// few allocations, not one per step.
	chunk := make([]Steps, min(max(int(rt.built), 1), buildChunk))
	for i := range chunk {
		chunk[i].e = e
	}
	for i := 1; i < len(chunk); i++ {
		chunk[i].next = rt.spare
		rt.spare = &chunk[i]
	}
	rt.spareN += int32(len(chunk) - 1)
	rt.created += int32(len(chunk))
	return &chunk[0]
}

// popSpare takes one of rt's spare frames (reset when they were
// released: releasePlain, releaseFrame, discardBuilt), or nil. Building
// only: while rt runs its spares are the loop's.
func (rt *root) popSpare() *Steps {
	f := rt.spare
	if f != nil {
		rt.spare = f.next
		rt.spareN--
		f.next = nil
	}
	return f
}

// markBuilt makes f a kind step of parent, added to rt before its start.
// f's flow is nil, as every frame's is that waits in a free list, a spare
// list or the build pool (reset, toSpare, newFrame with no flow): it is
// set when the frame is dequeued to run (Execute, attachFlow). Not
// written again here: a pointer store with its write-barrier test.
func (rt *root) markBuilt(f *Steps, kind uint8, parent *Steps) {
	rt.built++
	f.kind = kind
	f.parent = parent
	f.flags = fBuilt
	f.setStatus(stQueued)
}

// takeShared takes frames for a root being built off the loop from the
// engine's build pool, doubling with the root's size as chunks do: the
// first is returned, the rest kept as spares. Nil when the pool is empty.
func (rt *root) takeShared() *Steps {
	e := rt.e
	e.rootMu.Lock()
	f, k := e.takeBuild(min(max(int(rt.built), 1), buildChunk))
	e.rootMu.Unlock()
	if f == nil {
		return nil
	}
	rt.spare = f.next
	rt.spareN += int32(k - 1)
	f.next = nil
	return f
}

// discardBuilt drops steps added to a root that is not running.
func (rt *root) discardBuilt(f *Steps) {
	for c := f.dequeue(); c != nil; c = f.dequeue() {
		rt.discardBuilt(c)
		if c.bin != nil {
			bridge.release(c.bin, rt.e.r.IsSameThread())
		}
		c.reset()
		rt.built--
		c.next = rt.spare
		rt.spare = c
		rt.spareN++
	}
}

// Execute starts the root's flow on its reactor (spec 2.2.3). Safe from any
// goroutine; roots start in the order of their Execute calls. A root whose
// flow has ended may be given new steps and executed again.
//
// Called on the loop from a callback outside any step or handler the
// engine runs (not inside a step, a cancel or finally handler, a Lock's
// Leave, an OnEnd), with no flow of the reactor ready ahead of it, Execute
// runs the flow's first turn before it returns: its steps up to its first
// wait or its end, or one turn's budget of steps (a flow that never waits
// is then queued and goes on in the loop's pass: the caller gets control
// back). A panic in a step is the flow's InternalError there, as in any
// turn. Anywhere else on the loop, or for a root held back with
// X.DeferStart, the flow is queued behind the flows ready and runs in the
// loop's pass (CONTRACT.md, "Where a flow runs").
//
// Called from a goroutine outside the loops while the reactor's loop is
// parked (asleep with nothing to do), Execute runs that loop's turn itself
// before it returns, as the loop (CONTRACT.md, "Where a flow runs"): the
// flow's first steps, up to its first wait, may have run by then, and no
// thread was woken. A reactor made with reactor.Options.OwnThread never
// lends its turns.
//
// On a closed reactor the flow can never run: it ends at once with
// InternalError, ErrorInfo "reactor closed" (its OnEnd and Promise see
// it). A flow already waiting when the reactor closes ends Canceled.
func (as *Steps) Execute() {
	checkReleased(as, "Execute")
	if as == nil {
		return
	}
	if as.kind != kRoot {
		if as.kind == kForeign {
			as.foreign().Execute()
			return
		}
		misuse(as, "Execute: not a root")
		return
	}
	rt := rootOf(as)
	if rt.isReleased() {
		return
	}
	var g uint64
	for {
		v := rt.run.Load()
		if v&runActive != 0 {
			return // already executing: the spec allows one execute per run
		}
		g = v>>runGenShift + 1
		if rt.run.CompareAndSwap(v, g<<runGenShift|runActive) {
			break
		}
	}
	if e := rt.e; e.r.IsSameThread() {
		// On the loop: start it from the ready queue, behind the flows
		// already there, without a reactor task. prepareStart's short
		// start, in this frame (its call and frame were ~12 instructions
		// of Simple). A Cancel from another goroutine may have marked the
		// run since the CompareAndSwap: the slow start honours it.
		fl := rt.Steps.fl
		if fl == nil || !rt.keepFlow || fl.owned || fl.holding || rt.created != 0 ||
			rt.Steps.qlast == nil || e.build.want.Load() || rt.run.Load()&runCancel != 0 {
			if e.prepareStartSlow(rt) {
				e.runIfAlone(rt)
			}
			return
		}
		if x := rt.more.Load(); x != nil {
			// Tested last: a pooled root with an extension (a server's
			// request named after its command) has passed every other
			// test, and starts without prepareStartSlow repeating them.
			if x.deferStart {
				// A server's request flows, held back (X.DeferStart):
				// queued, as before, at one test's cost.
				e.startKeptExt(rt, fl, x)
				return
			}
			if e.readyHead == nil && !e.running && x.nameOnly() {
				// Alone, outside any step and walk (as the fast start
				// below): a pooled root named after what it serves (a
				// server's whole read) starts without the ready queue
				// and runs its first turn now, which runIfAlone would
				// have done after queueing it (~60 instructions: the
				// queue's link and unlink, the tests again, the loop's
				// pending flag).
				e.startNamedKept(rt, fl, x, false)
				fl.action = actExec
				if !e.runStarted(fl, x.name) {
					e.startedRaised(fl)
				}
				return
			}
			if e.startKeptExt(rt, fl, x) {
				e.runIfAlone(rt)
			}
			return
		}
		rt.started = true
		e.m.started++ // metrics.go
		e.stats.FramesLive += int(rt.built)
		if rt.built > rt.spareCap {
			// keepFlow: its frames stay its spares. A test and a branch,
			// not max's conditional move and store: a re-executed root
			// built no more frames than it has spares.
			rt.spareCap = rt.built
		}
		rt.built = 0
		fl.resetArgs() // as prepareStart: slot 0 alone when narrow
		rt.Steps.setStatus(stActive)
		c := rt.Steps.dequeue()
		c.fl = fl
		fl.cur = c
		if e.readyHead == nil && !e.running {
			// Not in the run list yet: runStarted links the flow if it
			// is still running when its turn ends (or a callback
			// panicked or exited the goroutine), so that a flow that
			// ends in its first turn (the Simple row) is never linked
			// and unlinked. Nothing reads the list meanwhile: closeAll,
			// its only walker, never runs inside a callback (a manual
			// reactor's Close inside one of its drives ends no flow:
			// closeManual returns when running != 1; a real loop's runs
			// in its shutdown, after the loop stops).
			// Nothing ready ahead of it, and not inside a step or the
			// engine's own walk (running is set wherever a callback
			// runs: RunReady, runStarted, a cancel handler, a Leave, an
			// OnEnd; e.cur is never set without it): its turn now, not
			// queued for the loop's next pass (runStarted; CONTRACT.md,
			// "Where a flow runs").
			fl.action = actExec
			if !e.runStarted(fl, nil) {
				e.startedRaised(fl)
			}
			return
		}
		e.linkRun(fl)
		e.ready(fl, actExec)
		return
	}
	// Off the loop: when the loop is parked, the caller runs its turn,
	// which starts the flow (reactor.X.PostRun), rather than waking the
	// loop's thread for it and then, often, being woken by it. Parked is
	// tested here, inlined, so that other reactors pay one load over Post.
	//
	// An idle manual reactor with nothing queued, called from its
	// driver's goroutine between drives (Simple from a goroutine; only the
	// driver, which reads the engine's counters between drives without the
	// word): the caller takes the loop's word and starts the flow itself,
	// as the posted startRoot would have first thing in the next iteration
	// (reactor.X.TakeIdle), without the post, the queue and the task's run
	// (~100 of Simple's instructions). Only a root whose start runs no user callback: it
	// has a step to run and no extension (no OnEnd, Promise, context or
	// misuse to end it with), whatever a Cancel since the CompareAndSwap
	// makes of it.
	var ok bool
	if r := rt.e.r; reactor.X.Parked(r) {
		if reactor.X.RunParked(r, startRootNow, unsafe.Pointer(rt), g) {
			return // started and run to its first wait or its end, here (startnow.go)
		}
		// Queued, not started at once: this task may be taken from the
		// ring in a drain with other start tasks behind it, and a flow
		// run inside the drain could execute roots that overtake them
		// (TestRingStartsKeepExecuteOrderAgainstRootsTheirStepsExecute).
		ok = reactor.X.PostRun(r, startRoot, unsafe.Pointer(rt), g)
	} else if reactor.X.TakeIdle(r) {
		if rt.Steps.qlast != nil && rt.more.Load() == nil {
			rt.e.prepareStart(rt)
			reactor.X.GiveBack(r)
			return
		}
		ok = reactor.X.Post(r, startRoot, unsafe.Pointer(rt), g) // queued locally, as the loop
		reactor.X.GiveBack(r)
	} else {
		ok = reactor.X.Post(r, startRoot, unsafe.Pointer(rt), g)
	}
	if !ok {
		rt.endClosed() // the reactor is closed: the flow can never run
	}
}

// startOff starts rt's run g, claimed by Promise off the loop after its
// direct start (startPromiseNow) found the loop awake or busy: Execute's
// off-loop way without its direct start, a copy (a call from Execute to
// a shared function cost Simple from a goroutine 13 instructions:
// change the two together).
func (rt *root) startOff(g uint64) {
	var ok bool
	if r := rt.e.r; reactor.X.Parked(r) {
		// Queued, not started at once (Execute's way after its direct
		// start; startRoot's comment).
		ok = reactor.X.PostRun(r, startRoot, unsafe.Pointer(rt), g)
	} else if reactor.X.TakeIdle(r) {
		// Execute's start under the idle word is for a root without an
		// extension: a Promise's root is queued locally, as the loop.
		ok = reactor.X.Post(r, startRoot, unsafe.Pointer(rt), g)
		reactor.X.GiveBack(r)
	} else {
		ok = reactor.X.Post(r, startRoot, unsafe.Pointer(rt), g)
	}
	if !ok {
		rt.endClosed() // the reactor is closed: the flow can never run
	}
}

// endClosed ends rt's run, posted to a reactor found closed: the flow can
// never run, and ends with InternalError, info "reactor closed". Out of
// line: the starts' rare way out.
//
//go:noinline
func (rt *root) endClosed() {
	st := rt.stateForWrite()
	st.ErrorInfo = "reactor closed"
	st.LastException = &Error{Code: InternalError, Info: "reactor closed"}
	rt.endRunWith(InternalError)
}

// startRoot starts a root executed off the loop. It joins the ready queue
// rather than running at once, so roots start in the order of their Execute
// calls whichever goroutine made them.
func startRoot(arg unsafe.Pointer, g uint64) {
	rt := (*root)(arg)
	if rt.execGen() != g || rt.started {
		return // a start for a run that is already over
	}
	rt.e.prepareStart(rt)
}

// prepareStart readies rt's flow to run its first step (queued) and reports
// whether there is one; a root with no steps, or one misused while being
// built, ends here.
//
// Its first part is the start of a pooled root run again as it was last
// time (Simple's shape): the flow kept from the last run (keepFlow) with
// nothing in it to clear, no extension (no name, context, Promise, OnEnd
// or misuse), no frame allocated while building, no cancel asked, the
// build pool not asking for a refill, and a first step. It does what
// prepareStartSlow does for such a root, without the tests that all come
// out false for it (a third of Simple's start). startNamedKept is the same
// start for a root named and nothing more, and Execute on the loop has a
// third copy in its own frame; change the three together. They are copies
// on purpose: letting a name-only extension through here cost every
// unnamed root 6 instructions (Simple 902 -> 908, callgrind), and the call
// from Execute ~12.
func (e *engine) prepareStart(rt *root) bool {
	fl := rt.Steps.fl
	if fl == nil || !rt.keepFlow || fl.owned || fl.holding || rt.created != 0 ||
		rt.Steps.qlast == nil || rt.more.Load() != nil || e.build.want.Load() ||
		rt.run.Load()&runCancel != 0 {
		return e.prepareStartSlow(rt)
	}
	rt.started = true
	e.m.started++ // metrics.go
	e.stats.FramesLive += int(rt.built)
	if rt.built > rt.spareCap { // keepFlow: its frames stay its spares (a branch, as in Execute)
		rt.spareCap = rt.built
	}
	rt.built = 0
	fl.resetArgs() // narrow: slot 0 alone (an empty success left slots 1-3 empty)
	e.linkRun(fl)
	rt.Steps.setStatus(stActive)
	c := rt.Steps.dequeue()
	c.fl = fl
	fl.cur = c
	e.ready(fl, actExec)
	return true
}

// prepareStartSlow is prepareStart for every other root.
func (e *engine) prepareStartSlow(rt *root) bool {
	if x := rt.more.Load(); x != nil && x.startsPlain() {
		if fl := rt.Steps.fl; fl != nil && rt.keepFlow && !fl.owned && !fl.holding &&
			rt.created == 0 && rt.Steps.qlast != nil && !e.build.want.Load() &&
			rt.run.Load()&runCancel == 0 {
			return e.startNamedKept(rt, fl, x, true)
		}
	}
	rt.started = true
	e.m.started++ // metrics.go
	x := rt.more.Load()
	if x != nil && x.name != nil {
		e.namedStarted(rt, x)
	}
	e.stats.FramesLive += int(rt.built)
	e.stats.FramesCreated += int(rt.created)
	if rt.keepFlow || rt.execGen() > 1 {
		// A root that is run again or released keeps its frames as
		// spares for its next build. A fresh root's first run gives them
		// back to the loop (spareCap 0): most such roots are dropped at
		// its end, and their frames would be dropped with them.
		rt.spareCap = max(rt.spareCap, rt.built)
		// And its flow (keepFlow): a root run again is one its holder
		// reuses (stepsd's pooled requests), as the pool's are, so from
		// its second run on it starts and ends as they do, on
		// prepareStart's and finishRoot's short paths
		// (profiles/notes/2026-11-27-stepsd2-round3.md).
		rt.keepFlow = true
	}
	if rt.created > 0 || e.build.want.Load() {
		e.refillBuild() // the build pool ran low (buildpool.go)
	}
	rt.built, rt.created = 0, 0
	fl := e.attachFlow(rt)
	e.linkRun(fl) // the run list lives in the flow: the root stays small
	rt.Steps.setStatus(stActive)
	if x != nil && x.misuse != "" {
		info := x.misuse
		x.misuse = ""
		e.setError(&rt.Steps, InternalError, info, nil)
		e.finishRoot(rt, InternalError)
		return false
	}
	if rt.run.Load()&runCancel != 0 {
		e.finishRoot(rt, Canceled) // canceled before it could start: no step runs
		return false
	}
	if x != nil && x.ctx != nil && !e.watchContext(rt, x) {
		return false // its context is done already: no step runs
	}
	if c := rt.Steps.dequeue(); c != nil {
		c.fl = fl
		fl.cur = c
		e.ready(fl, actExec)
		return true
	}
	e.finishRoot(rt, "")
	return false
}

// startKeptExt starts a pooled root that passed Execute's tests for the
// short start but has an extension: startNamedKept when it holds the name
// alone, prepareStartSlow for anything else.
func (e *engine) startKeptExt(rt *root, fl *flow, x *rootExt) bool {
	if x.nameOnly() {
		return e.startNamedKept(rt, fl, x, true)
	}
	return e.prepareStartSlow(rt)
}

// runIfAlone runs the flow of rt, which Execute has just started on the
// loop and queued (prepareStartSlow, startKeptExt), at once when it is
// alone in the ready queue and Execute was not called inside a step or
// the engine's own walk: Execute's fast start does the same without
// queueing it. A root held back with X.DeferStart stays queued.
//
//go:noinline
func (e *engine) runIfAlone(rt *root) {
	fl := rt.Steps.fl
	if fl == nil || e.readyHead != fl || e.readyTail != fl || e.cur != nil || e.running {
		return
	}
	x := rt.more.Load()
	if x != nil && x.deferStart {
		return
	}
	e.unlinkReady(fl)
	var n *Name
	if x != nil {
		n = x.name
	}
	if !e.runStarted(fl, n) {
		e.startedRaised(fl)
	}
}

// startNamedKept is prepareStart's short start for a pooled root whose
// extension holds nothing its start acts on but its name (x.startsPlain):
// a server's request flow named after its command, a root waited for by a
// Promise or a Batch. Apart from the name's count it does what
// prepareStart does; it is kept out of prepareStart so that unnamed roots
// pay nothing for it (Simple).
//
// queue false is Execute's start of such a root that it runs at once
// (alone, outside any walk): the flow is not put in the ready queue
// (runStarted takes it), as Execute's fast start for a plain root.
func (e *engine) startNamedKept(rt *root, fl *flow, x *rootExt, queue bool) bool {
	rt.started = true
	e.m.started++ // metrics.go
	if x.name != nil {
		e.namedStarted(rt, x)
	}
	e.stats.FramesLive += int(rt.built)
	if rt.built > rt.spareCap { // keepFlow: its frames stay its spares (a branch, as in Execute)
		rt.spareCap = rt.built
	}
	rt.built = 0
	fl.resetArgs() // as prepareStart
	e.linkRun(fl)
	rt.Steps.setStatus(stActive)
	c := rt.Steps.dequeue()
	c.fl = fl
	fl.cur = c
	if !queue {
		return true
	}
	e.ready(fl, actExec)
	return true
}

// attachFlow gives rt a flow from the loop's pool (or a new one). Frames
// built before the start (root-level steps; the branches of a root-level
// parallel step get their own flows when it starts) are pointed at it as
// they are dequeued to run: a walk here would touch every one of them
// once more. Loop only.
func (e *engine) attachFlow(rt *root) *flow {
	fl := rt.Steps.fl
	if fl == nil {
		fl = e.freeRootFlows
		if fl != nil {
			e.freeRootFlows = fl.nextBranch
			fl.nextBranch = nil
			if e.stats.RootFlowsFree--; e.stats.RootFlowsFree < e.trim.flowsLow {
				e.trim.flowsLow = e.stats.RootFlowsFree
			}
		} else {
			fl = &flow{e: e}
		}
		fl.root, fl.top = rt, &rt.Steps
		rt.Steps.fl = fl
	} else {
		// Kept from the last run (detachFlow): pooled flows are clean.
		fl.clearArgs()
		clear(fl.held)
		fl.held, fl.holding = fl.held[:0], false
	}
	fl.cur = &rt.Steps
	return fl
}

// detachFlow gives rt's flow back to the loop's pool at the end of a run.
// Loop only; a root that never started has no flow.
func (e *engine) detachFlow(rt *root) {
	fl := rt.Steps.fl
	if fl == nil {
		return
	}
	if rt.keepFlow || fl.owned && fl.args.hasOwned() {
		// A pooled root keeps its flow (keepFlow). And when the flow's
		// last values hold a bridge's owned values, the root keeps them
		// (and so its flow) until it is released or run again, since a
		// Promise may still read them.
		return
	}
	rt.Steps.fl = nil
	fl.clearArgs()
	clear(fl.held)
	fl.held, fl.holding = fl.held[:0], false
	fl.root, fl.top, fl.cur = nil, nil, nil
	fl.action = actNone
	fl.nextBranch = e.freeRootFlows
	e.freeRootFlows = fl
	if e.stats.RootFlowsFree++; e.stats.RootFlowsFree > trimFloor && !e.trim.armed {
		e.armTrim()
	}
}

// linkRun puts fl at the head of the running roots' list (engine.runHead),
// which unlinkRun takes it out of. Small enough to inline into every start.
func (e *engine) linkRun(fl *flow) {
	fl.nextRun = e.runHead
	if e.runHead != nil {
		e.runHead.prevRun = fl
	}
	e.runHead = fl
}

// unlinkRun takes fl out of the running roots' list (engine.runHead), if
// it is there: a flow that ended in the first turn Execute ran
// (runStarted) was never linked. A flow out of the list has both links
// nil (linkRun sets them, this clears them), so one that is not the head
// and has no predecessor is not in the list, and nothing is stored.
func (e *engine) unlinkRun(fl *flow) {
	if fl.prevRun != nil {
		fl.prevRun.nextRun = fl.nextRun
	} else if e.runHead == fl {
		e.runHead = fl.nextRun
	} else {
		return // not linked
	}
	if fl.nextRun != nil {
		fl.nextRun.prevRun = fl.prevRun
	}
	fl.prevRun, fl.nextRun = nil, nil
}

// linkStarted links fl, whose first turn runStarted ran, into the run
// list unless it is there: Execute's fast start leaves that to the end of
// the turn, and the other starts that runStarted serves have linked it.
func (e *engine) linkStarted(fl *flow) {
	if fl.prevRun == nil && e.runHead != fl {
		e.linkRun(fl)
	}
}

// finishRoot ends the root's flow: success when code is "", else failure.
//
// Its first part is the common end of a pooled root: a success, the flow
// kept (keepFlow) and not in the ready queue, no step left queued, no
// extension (no Promise, so endRunWith's whole work is endRun, detachFlow
// leaving the flow with the root). It calls nothing but release, last,
// so that the compiler spills nothing on its way (the general end below
// saved four registers for its calls: Simple's end paid for them).
// advanceFast has a copy for the root's last step; change the two
// together.
func (e *engine) finishRoot(rt *root, code string) {
	rt.started = false
	fl := rt.Steps.fl
	if code == "" && fl != nil && !fl.queued && rt.keepFlow && rt.Steps.qlast == nil && rt.more.Load() == nil {
		e.unlinkRun(fl)
		fl.cur = &rt.Steps
		fl.action = actNone
		rt.Steps.setStatus(stIdle)
		e.m.succeeded++ // flowEnded's first case
		rt.endRunClear(fl)
		if rt.releaseAtEnd.Load() && rt.releaseAtEnd.Swap(false) {
			rt.release()
		}
		return
	}
	if fl != nil {
		e.unlinkRun(fl)
		if fl.queued {
			e.unlinkReady(fl) // a canceled flow may still be queued: its next run must queue afresh
		}
		// A run canceled in place (cancelRoot, closeAll) ends without
		// queueing the flow again, which would have overwritten parked's
		// hint: cleared here, or the pool keeping this flow keeps the
		// hinted flow from the GC. Not queued now, so not a link.
		fl.prevReady = nil
		fl.cur = &rt.Steps
		fl.action = actNone
	}
	if rt.Steps.qlast != nil {
		e.discardQueued(&rt.Steps)
	}
	rt.Steps.setStatus(stIdle)
	if x := rt.more.Load(); x == nil && code == "" && rt.keepFlow {
		// The common end of a pooled root (the first part's), after a
		// queued step was discarded or the flow taken out of the queue.
		e.m.succeeded++
		rt.endRun()
	} else if code == "" && rt.keepFlow && x.nameOnly() {
		// The same end for a root whose extension holds its name alone
		// (a server's flow named after its command): flowEndedSlow's
		// success, and nothing for endExt or endRunWaited to do.
		e.m.succeeded++
		if x.name != nil {
			e.namedSucceeded(x)
		}
		rt.endRun()
	} else if code == "" && x != nil && x.startsPlain() && x.onEnd == nil {
		// A success waited for by a Promise or a Batch (beside a name at
		// most): flowEndedSlow's success, nothing for endExt to do, and
		// endRunWith's waited end, without the tests that come out so.
		e.m.succeeded++
		if x.name != nil {
			e.namedSucceeded(x)
		}
		rt.endRunWaited(x, code)
	} else if x != nil && x.onEnd != nil {
		e.endOnEnd(rt, x, code) // the rest of the end too, however OnEnd leaves
		return
	} else {
		e.flowEnded(rt, code)
		if x != nil {
			e.endExt(rt, x, code)
		}
		rt.endRunWith(code)
	}
	if rt.releaseAtEnd.Load() && rt.releaseAtEnd.Swap(false) {
		rt.release()
	}
}

// finishKeptExt is advanceFast's end of a pooled root's successful run
// (its flow not queued, nothing left queued) when the root has an
// extension: the same short end as a plain root's when the extension holds
// the name alone (a server's request named after its command), counted for
// the name, without finishRoot's general part; finishRoot for anything
// else.
//
// A Promise's or a Batch's root (startsPlain, no OnEnd: the off-loop
// call's flow, Call and FanOut) ends here too, as finishRoot's waited
// success ends it: finishRoot's general part re-tested what advanceFast
// had already found (queued, qlast, the extension's fields twice), about
// 100 instructions a flow.
func (e *engine) finishKeptExt(rt *root, fl *flow, x *rootExt) {
	waited := x.promise != nil || x.batch != nil
	if !x.startsPlain() || x.onEnd != nil {
		e.finishRoot(rt, "")
		return
	}
	rt.started = false
	e.unlinkRun(fl)
	fl.cur = &rt.Steps
	fl.action = actNone
	rt.Steps.setStatus(stIdle)
	e.m.succeeded++
	if x.name != nil {
		e.namedSucceeded(x)
	}
	if waited {
		rt.endRunWaited(x, "")
	} else {
		rt.endRun()
	}
	if rt.releaseAtEnd.Load() && rt.releaseAtEnd.Swap(false) {
		rt.release()
	}
}

// endExt ends what a run's rarely used extension holds: its context
// watch and its trace task (OnEnd is endOnEnd's). Out of line: finishRoot
// runs at every root's end, and this body inside it cost the common end
// (no extension) 5-10 ns (the MutexSection row;
// profiles/notes/2026-11-25-session17-merge-and-final-tables.md).
//
//go:noinline
func (e *engine) endExt(rt *root, x *rootExt, code string) {
	if x.stopCtx != nil {
		x.unwatchContext()
	}
	if x.trace != nil {
		x.endTrace(code)
	}
}

// endOnEnd is finishRoot's general end for a root with an OnEnd: fn runs
// first, before the run ends (until then the holder cannot release or
// reuse the root under fn: a Release from fn waits for the end), then the
// rest of the end, in a deferred call, so that the run ends exactly once
// however fn leaves.
//
// A panic in fn is the run's InternalError, as a step's panic is
// (LastException the *PanicError, ErrorInfo its text): its Promise or
// Batch gets it, and it is counted so. It is recovered here, not left to
// the recover of the batch (runBatch) or of whoever ended the root (a
// Cancel's task, the root's start, the reactor's close): runBatch took it
// for a panic of a step and ended the root a second time (OnEnd ran again
// and its second panic escaped RunReady, with the root's run never
// ended), and elsewhere it escaped with the run half-ended, so that the
// root never ran again and its Promise never ended. A runtime.Goexit in
// fn (t.FailNow) ends the run the same way before the goroutine ends.
//
// fn runs with RunReady refused (engine.running): a root's end may come
// from a cancel, in the middle of the engine's walk.
//
//go:noinline
func (e *engine) endOnEnd(rt *root, x *rootExt, code string) {
	saved := e.running
	panicked := true
	defer func() {
		e.running = saved
		if panicked {
			if v := recover(); v != raiseSignal && v != xForeignUnwind {
				st := rt.stateForWrite()
				st.ErrorInfo = fmt.Sprint(v)
				st.LastException = &PanicError{Value: v}
				code = InternalError
			}
			// else a raise of the callback that ended this root (e.cur's:
			// a step that executed an empty root on the loop), made from
			// fn (its accessor's Error, or a misuse, which fails the
			// running step): not fn's panic. It stands in e.raised (or
			// the foreign's), and that callback's flow settles it when
			// the callback returns, as for a callback that recovers the
			// raise itself; this run keeps its own outcome.
		}
		e.flowEnded(rt, code)
		e.endExt(rt, x, code)
		rt.endRunWith(code)
		if rt.releaseAtEnd.Load() && rt.releaseAtEnd.Swap(false) {
			rt.release()
		}
	}()
	e.running = true
	x.onEnd(&rt.Steps, code)
	panicked = false
}

// endRunWith ends the run: success when code is "". A run that someone
// waits for (a Promise, a Batch) ends in endRunWaited; the common end, no
// waiter, pays one load and one test for them.
func (rt *root) endRunWith(code string) {
	if x := rt.more.Load(); x != nil && (x.promise != nil || x.batch != nil) {
		rt.endRunWaited(x, code)
		return
	}
	rt.e.detachFlow(rt) // before running clears: then the holder may build the root again
	rt.endRun()
}

// endRunWaited is endRunWith for a run with a Promise or in a Batch: the
// result is stored first; running is cleared next (the owner may release
// the root as soon as running is false); the Promise is closed, and the
// Batch counts the end, last (the owner may execute the root again as
// soon as Wait returns).
//
//go:noinline
func (rt *root) endRunWaited(x *rootExt, code string) {
	p, b, bi := x.promise, x.batch, x.batchIdx
	x.promise, x.batch = nil, nil
	if b != nil {
		b.setResult(bi, rt, code)
	}
	e := rt.e
	state := promiseEnded
	if p != nil {
		if code == "" {
			// Before detachFlow, on the loop; an end off the loop (closed
			// reactor) is never a success. p is a fresh slot (never
			// reused, zero: newPromise), so with narrow set (slots 1-3
			// empty) slot 0 is the whole copy: 32 bytes written, not 128,
			// and the Promise's last lines are not touched here.
			if fl := rt.Steps.fl; fl.narrow {
				p.args.v[0] = fl.args.v[0]
			} else {
				p.args = fl.args
			}
			if !e.trim.armed {
				e.armTrim() // its tick lets go of the current Promise slab (trimTick)
			}
		} else {
			p.failErr(&Error{Code: code, Info: rt.state.ErrorInfo})
			state = promiseFailed
			if !e.r.Closed() && !e.trim.armed {
				// As a success's values: the *Error (its Info may be
				// large) is let go of with the slab at the tick. Not
				// when the reactor closes (closeAll ends the flows off
				// its turns, and no timer fires any more): its engine
				// and slab go with it. Closed is tested first: an end
				// off the loop (Execute or a Batch on a closed reactor)
				// must not read the loop's trim state, which a turn
				// still running on the loop or on a caller writes.
				e.armTrim()
			}
		}
	}
	// A success's values are the Promise's and the Batch's now: a kept
	// flow that holds no owned values (a Promise's copy may point at
	// those: detachFlow) is emptied here, on the loop, where its first
	// line was just written, and argsClear tells Release so. A fan-out
	// releases its roots a thousand flows later, its flows evicted, and
	// Release's look at their values (the flow's first two lines) was
	// 3 of its 5 simulated L1 misses a FanOut flow.
	// Such a flow stays with its root (keepFlow): detachFlow would do
	// nothing to it, and is not called.
	if fl := rt.Steps.fl; code == "" && fl != nil && rt.keepFlow && !fl.owned {
		fl.resetArgs()
		rt.endRunEmptied() // a release store: p.end's or batchEnded's locked op below is its fence
	} else {
		e.detachFlow(rt)
		rt.endRun()
	}
	if p != nil {
		p.end(state) // its Swap is endRunEmptied's fence, a direct start's too
	}
	if b != nil {
		b.batchEnded(bi) // last: once it counts the end, the Batch's waiter may reuse everything
	}
}

// Cancel cancels the root's flow (spec 2.2.3): every pending cancel handler
// runs once, innermost first, and no error handler; a Promise reports
// Canceled. Safe from any goroutine; it takes effect on the loop. From the
// moment it is called, no outcome already on its way to the flow is
// applied: a timeout that fell due, an External's result, a Sync object's
// hand-over, queued in the same loop turn or earlier, is dropped, and the
// flow runs nothing but its cancel handlers. A step (or error handler) of
// the flow itself that cancels its own root finishes its callback, and
// the flow stops there. Canceling a root that is not executing does
// nothing.
func (as *Steps) Cancel() {
	checkReleased(as, "Cancel")
	if as == nil || as.kind != kRoot {
		if as.isForeign() {
			as.foreign().Cancel()
			return
		}
		misuse(as, "Cancel: not a root")
		return
	}
	rt := rootOf(as)
	if rt.isReleased() {
		return // a stale root: the misuse does nothing
	}
	if g, ok := rt.askCancel(); ok {
		e := rt.e
		if e.r.IsSameThread() {
			e.leaveChain() // a chain's step cancels: it is the one that yields
			if c := e.cur; c != nil && c.fl != nil && c.fl.root == rt {
				// A step (or error handler) of the flow cancels its own
				// root: the flow stops when the callback returns.
				c.flags |= fYield
			}
		}
		reactor.X.Post(e.r, cancelRoot, unsafe.Pointer(rt), g)
	}
}

// yieldCanceled stops f's flow after a callback of f that canceled the
// flow's own root (fYield): it runs nothing more, and the posted
// cancelRoot cancels it from f. Reports whether it did.
func (e *engine) yieldCanceled(f *Steps) bool {
	if f.flags&fYield == 0 {
		return false
	}
	f.flags &^= fYield
	fl := f.fl
	fl.cur = f
	fl.action = actNone
	return true
}

// Ref is a generation-checked reference to a root, for a goroutine that
// may act on it after its owner has released it (a watchdog, a client that
// went away): a Ref taken before a Release does nothing to whoever gets the
// root's memory next, exactly like a stale External. A small value; no
// allocation.
type Ref struct {
	rt    *root
	lease uint64
}

// Ref returns a generation-checked reference to the root as (root only; the
// zero Ref otherwise). Safe from any goroutine that may use the root.
func (as *Steps) Ref() Ref {
	checkReleased(as, "Ref")
	if as == nil || as.e == nil || as.kind != kRoot {
		return Ref{}
	}
	rt := rootOf(as)
	return Ref{rt: rt, lease: rt.lease.Load()}
}

// Valid reports whether the root has not been released since the Ref was
// taken.
func (x Ref) Valid() bool {
	// One load: a Ref taken while the root was released carries the bit,
	// and stays invalid after the next New.
	return x.rt != nil && x.lease&leaseReleased == 0 && x.rt.lease.Load() == x.lease
}

// Cancel cancels the root's flow, as Steps.Cancel, if the root has not been
// released since the Ref was taken, and reports whether it asked for it.
// Safe from any goroutine.
func (x Ref) Cancel() bool {
	rt := x.rt
	if rt == nil || rt.lease.Load() != x.lease {
		return false
	}
	v := rt.run.Load()
	// Read the lease again: if it is unchanged, v belongs to a run of this
	// lease, and cancelRoot ignores it unless that very run is still going
	// (a later run, after a Release and a New, has a larger execGen).
	if v&runActive == 0 || rt.lease.Load() != x.lease {
		return false
	}
	// Mark that very run only (v's): a CAS from v, so a run of the next
	// owner is never marked.
	if v&runCancel == 0 && !rt.run.CompareAndSwap(v, v|runCancel) {
		// Changed meanwhile: another Cancel marked the same run (it
		// still runs, marked: post too), or the run ended.
		if w := rt.run.Load(); w&runActive == 0 || w>>runGenShift != v>>runGenShift {
			return false
		}
	}
	return reactor.X.Post(rt.e.r, cancelRoot, unsafe.Pointer(rt), v>>runGenShift)
}

func cancelRoot(arg unsafe.Pointer, g uint64) {
	rt := (*root)(arg)
	if v := rt.run.Load(); v&runActive == 0 || v>>runGenShift != g {
		return // that run is over (RunReady may have ended it already)
	}
	if !rt.started {
		return // its start task is still on the way: it sees runCancel
	}
	rt.e.cancelRun(rt)
}

// cancelRun ends rt's started run as canceled: its cancel handlers run,
// innermost first, and nothing else. Loop only, outside any callback.
func (e *engine) cancelRun(rt *root) {
	e.cancelBelow(&rt.Steps)
	e.finishRoot(rt, Canceled)
}

// Release gives a root back to its reactor's pool (root only). The root and
// every accessor of its flow must not be used after; its stale accessors
// report Valid() == false. Releasing a root that is still executing cancels
// it and releases it when the cancel is done. Call it from the goroutine
// that holds the root, or on the loop.
func (as *Steps) Release() {
	checkReleased(as, "Release")
	if as == nil || as.kind != kRoot {
		releaseNotRoot(as)
		return
	}
	rt := rootOf(as)
	if rt.run.Load()&runActive != 0 || rt.isReleased() {
		rt.releaseAfterRun(true)
		return
	}
	// Not running, not released: back to the pool, in this frame (a call
	// to a release function and its frame were ~10 instructions of
	// Simple). release, for releaseAfterRun and finishRoot, calls Release.
	if rt.Steps.qlast != nil {
		rt.discardBuilt(&rt.Steps)
	}
	if rt.extKept {
		if rt.bin != nil {
			bridge.release(rt.bin, rt.e.r.IsSameThread())
			rt.bin = nil
		}
		if x := rt.more.Load(); x != nil {
			*x = rootExt{} // no run: no context watch, no trace task
		}
		rt.extKept = false
	}
	if rt.stateUsed.Load() {
		rt.state.reset() // so that a pooled root pins nothing put there
	}
	if fl := rt.Steps.fl; fl != nil && !rt.argsClear && (fl.owned || !fl.args.empty()) {
		fl.clearArgs() // the values detachFlow left with the root
	}
	// One releaser per release (releaseAfterRun's flag), so the bump and
	// the released bit are a load and one store (setLease: a plain MOV on
	// amd64), not a locked add. No full fence: nothing after it here must
	// see another goroutine's store first, and the pool's lock (or the
	// loop's own list) orders the root's next New.
	rt.setLease((rt.lease.Load() | leaseReleased) + leaseOne)
	e := rt.e
	if debugReleased {
		// Never reused: the root stays released for whoever kept it,
		// and is garbage once nobody does.
		e.rootMu.Lock()
		e.rootsLive--
		e.rootMu.Unlock()
		return
	}
	if e.r.IsSameThread() {
		if n := e.rootLocal.n(); n < maxRootLocal {
			e.rootLocal.push(rt)
			e.stats.RootsLive--
			if n >= trimFloor && !e.trim.armed {
				e.armTrim()
			}
			return
		}
	}
	e.rootMu.Lock()
	e.rootFree.push(rt)
	e.rootsLive--
	e.rootMu.Unlock()
}

// releaseNotRoot is Release of anything but a root: a foreign object's, or
// a misuse.
func releaseNotRoot(as *Steps) {
	if as.isForeign() {
		as.foreign().Release()
		return
	}
	misuse(as, "Release: not a root")
}

// ReleaseAtEnd lets the root's flow run to its end and then gives the
// root back to its reactor's pool (root only): the fire-and-forget way,
// New, Add, Execute, ReleaseAtEnd, and nothing more to do. A root that is
// not executing is released at once. Unlike Release it never cancels.
// After it the root is the engine's: the caller must not use it again (a
// Ref stays safe). Safe from any goroutine that holds the root, and on the
// loop, inside the flow's own steps too.
func (as *Steps) ReleaseAtEnd() {
	checkReleased(as, "ReleaseAtEnd")
	if as == nil || as.kind != kRoot {
		misuse(as, "ReleaseAtEnd: not a root")
		return
	}
	rootOf(as).releaseAfterRun(false)
}

// releaseAfterRun releases rt now or, while its flow runs, when the flow
// ends (canceling it first if cancel): Release and ReleaseAtEnd.
func (rt *root) releaseAfterRun(cancel bool) {
	if rt.isReleased() {
		return
	}
	if rt.running() {
		// Set the flag, then look again: finishRoot clears running, then
		// takes the flag; whoever takes it releases, so exactly one does.
		rt.releaseAtEnd.Store(true)
		if cancel {
			rt.Steps.Cancel()
		}
		if rt.running() || !rt.releaseAtEnd.Swap(false) {
			return // finishRoot releases it
		}
	}
	rt.release()
}

// release gives rt, which is not running and not released, back to its
// reactor's pool: Release's own last case, which does the work.
func (rt *root) release() { rt.Steps.Release() }

// Promise is the end of a root's flow, to wait for from any goroutine.
// 144 bytes, carved from a per-reactor slab (promise_slab.go): one
// allocation per promiseSlabN flows. One word holds its state and its
// Done channel, and a failed flow's error lies where its values would
// (Wait returns no values then), so the result is most of it.
type Promise struct {
	r *reactor.Reactor // the flow's; nil for a Promise that failed at once
	// st is nil while the flow runs and nobody watches; promiseMaking
	// while a Done makes the channel; the channel itself once watched (Done
	// made it, or a Wait that parks did); promiseEnded or promiseFailed
	// once args are written. The end swaps its state in and closes the
	// channel only if it swapped one out, so the common end (nobody
	// parked, no Done) takes no lock; a Done that finds the end came
	// while it made the channel closes nothing.
	st atomic.Pointer[chanWord]
	// args: the values of the flow's last success; for a failed flow the
	// *Error, in args.v[0].ref (failErr).
	args Args
}

// chanWord stands for a channel's runtime object in Promise.st: a channel
// value is one pointer to it, which chanOf and wordOf reinterpret. The GC
// follows the word as it would the channel (it marks the object the
// pointer falls in, whatever its static type), and the checkptr rules hold:
// the runtime's channel object is larger than chanWord and pointer
// aligned.
type chanWord struct{ _ byte }

func chanOf(w *chanWord) chan struct{} { return *(*chan struct{})(unsafe.Pointer(&w)) }
func wordOf(c chan struct{}) *chanWord { return *(**chanWord)(unsafe.Pointer(&c)) }

// promiseStates are the Promise states that are not a channel: static
// addresses, so no channel's object has one.
var promiseStates [3]chanWord

var (
	promiseMaking = &promiseStates[0]
	promiseEnded  = &promiseStates[1] // a success: args hold its values
	promiseFailed = &promiseStates[2] // an error: args.v[0].ref is the *Error
)

// ended reports whether the flow has ended (args are written).
func (p *Promise) ended() bool {
	w := p.st.Load()
	return w == promiseEnded || w == promiseFailed
}

// failErr stores a failed flow's error where Wait finds it (before end).
func (p *Promise) failErr(err *Error) { p.args.v[0].ref = unsafe.Pointer(err) }

// closedChan is the Done of a Promise asked after its flow ended.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// end marks the flow ended with state (promiseEnded, or promiseFailed
// after failErr; args are written): Wait returns, Done's channel is
// closed. Once per Promise.
func (p *Promise) end(state *chanWord) {
	if w := p.st.Swap(state); w != nil && w != promiseMaking {
		close(chanOf(w)) // made before st became w
	}
}

// Promise executes the root and returns a way to wait for the end of its
// flow (spec 2.2.3). The Promise is the caller's for good (it and the
// *Args its Wait returns stay valid after the root's Release, and are
// never reused); Promises are allocated in slabs of 14 per reactor, so
// one kept Promise keeps its slab (2 KB) reachable. Its Done channel
// is made only if Done is called or Wait has to sleep.
//
// Promise executes: it is called instead of Execute, once per run. On a
// root already executing, or released, it returns a Promise whose Wait
// reports InternalError with an info that says which.
func (as *Steps) Promise() *Promise {
	checkReleased(as, "Promise")
	if as == nil || as.kind != kRoot {
		return failedPromise("Promise: not a root")
	}
	rt := rootOf(as)
	if rt.running() || rt.isReleased() {
		return failedPromise(promiseRefused(rt))
	}
	x := rt.waitExt()
	r := rt.e.r
	if r.IsSameThread() {
		p := rt.e.newPromise() // a slot of the reactor's slab (promise_slab.go)
		p.r = r
		x.promise = p
		as.Execute() // on the loop: Execute's own start
		return p
	}
	// Off the loop: Execute's claim of the run, without its tests of the
	// root again (made above), then its start. A start the run's end
	// could follow (a posted start task, a queued one) comes after
	// x.promise is set, and nothing ends a run that has not started
	// (cancelRoot), so the Promise may be made after the claim: under
	// the loop word by the direct start (startPromiseNow, from the loop's
	// own slab), else here.
	var g uint64
	for {
		v := rt.run.Load()
		if v&runActive != 0 {
			// Executing already (a racing Execute: a misuse): as
			// Execute, nothing is started, and the Promise ends with
			// that run.
			p := rt.e.newPromise()
			p.r = r
			x.promise = p
			return p
		}
		g = v>>runGenShift + 1
		if rt.run.CompareAndSwap(v, g<<runGenShift|runActive) {
			break
		}
	}
	if reactor.X.Parked(r) {
		// The Promise comes back on this goroutine's stack (RunParkedP),
		// not through the root: a flow that ended in the direct start may
		// have released the root there (a step's ReleaseAtEnd), and once
		// the word is given back the root may be another holder's.
		if p, ran := reactor.X.RunParkedP(r, startPromiseNow, unsafe.Pointer(rt), g); ran {
			if p == nil {
				// startPromiseNow panicked past every recover of the
				// turn (an engine fault; the PanicHandler had it): its
				// Promise is lost with its result.
				return failedPromise("Promise: its direct start panicked")
			}
			return (*Promise)(p)
		}
	}
	p := rt.e.newPromise()
	p.r = r
	x.promise = p
	rt.startOff(g)
	return p
}

// promiseRefused is the info of a Promise call on a root that is running
// or released.
func promiseRefused(rt *root) string {
	if rt.isReleased() {
		return "Promise: the root was released"
	}
	return "Promise: the root is executing (Promise executes it: call Promise instead of Execute, once per run)"
}

// failedPromise is the Promise of a Promise call that could not start
// the flow: ended at once with InternalError. An allocation of its own
// (the slabs are per reactor, and this has none).
func failedPromise(info string) *Promise {
	p := &Promise{}
	p.failErr(&Error{Code: InternalError, Info: info})
	p.st.Store(promiseFailed)
	return p
}

// Done is closed when the flow has ended.
func (p *Promise) Done() <-chan struct{} {
	for {
		switch w := p.st.Load(); w {
		case promiseEnded, promiseFailed:
			return closedChan
		case nil:
			if !p.st.CompareAndSwap(nil, promiseMaking) {
				continue
			}
			ch := make(chan struct{})
			// Watched from here: the end, which swaps its state in,
			// closes ch. An end that came while ch was made left st
			// ended and closes nothing.
			if p.st.CompareAndSwap(promiseMaking, wordOf(ch)) {
				return ch
			}
			return closedChan
		case promiseMaking: // another Done is making the channel
			runtime.Gosched()
		default: // watched: w is the channel
			return chanOf(w)
		}
	}
}

// Wait blocks until the flow ends and returns the values of its last
// success, or an *Error (Code Canceled for a canceled flow); the *Args is
// nil then, and its methods work on nil. Waiting on the loop's own
// goroutine (inside a callback, or on the goroutine that drives a manual
// reactor) for a flow that has not ended would deadlock: nothing else runs
// the flow. Wait panics then, with a message that says so; select on Done
// instead, or wait from another goroutine.
//
// Wait runs nothing that nobody runs: on a manual reactor it only waits,
// so a goroutine must drive it (Iterate, RunUntilIdle, Advance; the
// examples drive it first, then Wait), and a real reactor runs nothing
// before its Run (reactor.Group.Start). Until then Wait blocks.
//
// While it waits it helps: if the flow's real reactor is parked (its loop
// blocked in epoll_wait with nothing to do), Wait runs the reactor's
// ready work itself, up to four turns, as the loop (reactor.Assist); while
// the loop runs, it looks for the end for about 10 µs before it sleeps. A
// short flow then ends without a thread wake-up on either side. Steps that
// need the loop's own OS thread (thread-local state, its CPU pinning) run
// on a reactor made with reactor.Options.OwnThread, which nobody assists;
// Done never runs anything.
func (p *Promise) Wait() (*Args, error) {
	w := p.st.Load()
	if w == promiseEnded {
		return &p.args, nil // the common case: one load
	}
	if w != promiseFailed {
		if p.r != nil && p.r.IsLoopGoroutine() {
			panic("engine: Promise.Wait on the loop's own goroutine (inside a callback, or on the goroutine driving a manual reactor) for a flow that has not ended: it would deadlock, since only this goroutine can run the flow; drive the reactor first, or select on Done, or wait from another goroutine")
		}
		if !p.assist() {
			<-p.Done()
		}
		w = p.st.Load()
	}
	if w == promiseFailed {
		return nil, (*Error)(p.args.v[0].ref) // failErr's
	}
	return &p.args, nil
}

// maxAssists bounds the turns a waiter runs for the reactor (assist) before
// it parks: a flow that waits for a timer or for I/O leaves each turn with
// nothing to do, and the waiter must then sleep, not spin through turns.
const maxAssists = 4

// waitSpins bounds how many times a waiter looks at a flow that a running
// loop is taking care of before it parks (about 10 µs): a short flow ends
// within a few, and its waiter then returns without the wake-up of its
// goroutine that parking costs (a futex wake on another thread).
const waitSpins = 512

// assist runs the flow's reactor on the waiting goroutine while its loop is
// parked (reactor.Assist): the flow ends there instead of on a loop thread
// woken for it, and its end reaches this goroutine without waking it
// either. While the loop is running it looks for the end a short while
// instead. It reports whether the flow has ended.
func (p *Promise) assist() bool {
	if p.r == nil || p.r.Manual() {
		return false // a manual reactor's driver is the only one to run it
	}
	assists := 0
	for range waitSpins {
		if p.r.Assist() {
			if assists++; assists > maxAssists {
				return false
			}
		}
		if p.ended() {
			return true
		}
	}
	return false
}

// Executing reports whether the root's flow is running: from Execute until
// the flow ends. A root may be given new steps and executed again once it
// reports false. Safe from any goroutine.
func (as *Steps) Executing() bool {
	checkReleased(as, "Executing")
	return as != nil && as.kind == kRoot && rootOf(as).running()
}

// newNil is New's panic for a nil reactor: a mistake made outside any
// flow, so there is no flow to fail. Out of line, so that New carries a
// call, not the panic's boxing of its message (TestAllocEscapes).
//
//go:noinline
func newNil() {
	panic("engine: New(nil): a root needs a reactor (reactor.NewManual, reactor.New, or a Group's Next)")
}
