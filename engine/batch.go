package engine

import (
	"sync/atomic"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// Batch executes many roots at once and waits for them all: the fan-out
// of a goroutine that starts a thousand flows over a reactor Group and
// needs every result. Where Promise costs each flow a post to its
// reactor, a wake-up check and a share of an allocation (Promises
// come in slabs of 14 per reactor), a Batch posts once per
// reactor per Execute (the loop takes the whole chain of roots in one
// task; a parked loop is not woken for it: Execute runs its turn), keeps
// every result in
// its own reusable storage, and wakes the waiting goroutine once, when the
// last flow ends. Once its slices have grown, a Batch allocates nothing.
//
// Use: Add each built root (before its Execute), Execute, Wait, read each
// Result, then Release the roots (or build and add them again). A Batch is
// for one goroutine at a time, like a root being built; its flows run on
// their reactors' loops as any others, and its roots may be canceled or
// released meanwhile (their results are then Canceled). The zero Batch is
// ready to use.
type Batch struct {
	entries []batchEntry  // one per Add since the last Wait, in Add order
	shards  []*batchShard // one per reactor of the current set
	used    int           // shards in use for the current set
	left    atomic.Int64  // shards of the executed set with flows still running
	done    chan struct{} // one token per executed set with flows, sent by the last end
	state   uint8         // batchBuilding, batchExecuted
	live    bool          // the executed set has flows: Wait takes a token
	waited  bool          // the set was waited for: the next Add starts a new one
}

const (
	batchBuilding = iota
	batchExecuted
)

// batchEntry is one added root and, once its flow has ended, its result.
type batchEntry struct {
	rt    *root
	shard *batchShard
	g     uint64 // the run Execute began
	lease uint64 // rt's lease at Add: a root released (and perhaps reused) since is not run
	args  Args
	err   *Error
}

// batchShard is one reactor's part of a set: the chain of its roots that
// Execute hands to the loop in one task, and how many of them still run.
// left is on a cache line of its own: each loop counts its own flows'
// ends there, and only the last one touches the Batch's shared counter.
type batchShard struct {
	b          *Batch
	r          *reactor.Reactor
	head, tail *root
	n          int64
	lazy       bool // Run posted the chain without waking the loop: Run owes the wake-up
	_          [64]byte
	left       atomic.Int64
	_          [56]byte
}

// Add queues root to be executed by the next Execute and returns its
// index for Result. The root must be built (its steps added) and not
// executing; a root that is executing or released (between Add and
// Execute too, even if New has handed it out again since), or that is not
// a root, is not run, and its Result is an InternalError. Add after Wait forgets
// the previous set's results and starts a new set.
func (b *Batch) Add(root *Steps) int {
	checkReleased(root, "Batch.Add")
	if b.state == batchExecuted {
		panic("engine: Batch.Add after Execute and before Wait: wait for the executed set first")
	}
	if b.waited {
		b.forget()
	}
	i := len(b.entries)
	if i < cap(b.entries) {
		// Every entry past len is zero (forget clears the set it drops):
		// no second clearing of its 168 bytes here.
		b.entries = b.entries[:i+1]
	} else {
		b.entries = append(b.entries, batchEntry{})
	}
	ent := &b.entries[i]
	if root == nil || root.kind != kRoot {
		ent.err = &Error{Code: InternalError, Info: "Batch.Add: not a root"}
		return i
	}
	ent.rt = rootOf(root)
	ent.lease = ent.rt.lease.Load()
	return i
}

// Len returns how many roots the current set holds: after Wait, how many
// results Result gives (the set is dropped by the next Add or Execute), so
// that for i := range b.Len() reads them all.
func (b *Batch) Len() int {
	// Not 0 once waited: the results stay readable until the next Add
	// or Execute drops the set, and a Len of 0 made a loop over them
	// silently read none.
	return len(b.entries)
}

// forget drops the previous set: its roots and results. The entries it
// clears stay zero until Add reuses them (Add relies on it).
func (b *Batch) forget() {
	clear(b.entries)
	b.entries = b.entries[:0]
	for _, s := range b.shards[:b.used] {
		s.r, s.head, s.tail, s.n = nil, nil, nil, 0
	}
	b.used = 0
	b.waited = false
}

// shardOf returns the shard of r in the current set, adding it.
func (b *Batch) shardOf(r *reactor.Reactor) *batchShard {
	for _, s := range b.shards[:b.used] {
		if s.r == r {
			return s
		}
	}
	if b.used == len(b.shards) {
		b.shards = append(b.shards, &batchShard{b: b})
	}
	s := b.shards[b.used]
	b.used++
	s.r = r
	return s
}

// Execute executes every root added since the last Wait: each reactor of
// the set gets one task that starts its roots in Add order (roots already
// executing, or released, are not run: their Result is an InternalError;
// on a closed reactor, too). Safe from any goroutine that holds the
// Batch, on a loop too, where its own reactor's roots start behind the
// flows already ready. Execute twice without a Wait between panics.
//
// Called from a goroutine outside the loops, Execute runs the turn of each
// reactor of the set whose loop is parked itself, as Execute on one root
// does (CONTRACT.md, "Where a flow runs"): the task that starts that
// reactor's chain, and the flows' steps up to their first wait, may have
// run on the caller by the time Execute returns, and no loop thread was
// woken for them. Loops that are awake get their chains first.
func (b *Batch) Execute() { b.execute(false) }

// Run is Execute then Wait, for a goroutine that has nothing else to do
// meanwhile: a reactor whose loop is parked is not woken for the set;
// Run runs its turn itself (as Wait's assist does) and wakes it only when
// it could not. It differs from Execute, which runs parked loops' turns
// too, in that every chain is in its ring before the first turn runs, and
// a loop that was awake at the post but parked since is not woken either.
// Where Run may be called, and what it panics on, are Execute's and
// Wait's.
func (b *Batch) Run() {
	b.execute(true)
	for _, s := range b.shards[:b.used] {
		if s.lazy {
			s.lazy = false
			if !s.r.Assist() {
				reactor.X.Wake(s.r) // the wake-up PostLazy left to us
			}
		}
	}
	b.Wait()
}

func (b *Batch) execute(lazy bool) {
	if b.state == batchExecuted {
		panic("engine: Batch.Execute twice without Wait: wait for the executed set first")
	}
	if b.waited {
		b.forget()
	}
	for i := range b.entries {
		ent := &b.entries[i]
		rt := ent.rt
		if rt == nil {
			continue
		}
		if l := rt.lease.Load(); l&leaseReleased != 0 || l != ent.lease {
			// Released since Add, and perhaps New's again: the root's
			// memory may be another holder's now; it must not be run.
			ent.err = &Error{Code: InternalError, Info: "Batch: root is released"}
			continue
		}
		g, ok := rt.beginRun()
		if !ok {
			ent.err = &Error{Code: InternalError, Info: "Batch: root is executing"}
			continue
		}
		s := b.shardOf(rt.e.r)
		ent.g, ent.shard = g, s
		x := rt.more.Load() // extra's test, inlined: a pooled root has one
		if x == nil {
			x = rt.waitExt()
		}
		x.batch, x.batchIdx, x.batchNext = b, int32(i), nil
		if s.tail == nil {
			s.head = rt
		} else {
			s.tail.more.Load().batchNext = rt
		}
		s.tail = rt
		s.n++
	}
	b.state = batchExecuted
	live := int64(0)
	for _, s := range b.shards[:b.used] {
		if s.n > 0 {
			s.left.Store(s.n)
			live++
		}
	}
	b.live = live > 0
	if !b.live {
		return
	}
	if b.done == nil {
		b.done = make(chan struct{}, 1)
	}
	b.left.Store(live)
	// Two passes: chains for loops that are awake (or that are this
	// goroutine's own, or Run's lazy posts) go first, so those loops start
	// on their roots while this goroutine runs the turns of the parked
	// ones in the second pass.
	parked := 0
	for _, s := range b.shards[:b.used] {
		head := s.head
		if head == nil {
			continue
		}
		if e := head.e; e.r.IsSameThread() {
			s.head, s.tail = nil, nil
			startBatchChain(head)
			continue
		}
		var ok bool
		switch {
		case lazy && !s.r.Manual():
			ok = reactor.X.PostLazy(s.r, startBatch, unsafe.Pointer(head), 0)
			s.lazy = ok
		case reactor.X.Parked(s.r):
			parked++
			continue // the second pass's
		default:
			ok = reactor.X.Post(s.r, startBatch, unsafe.Pointer(head), 0)
		}
		s.head, s.tail = nil, nil
		if !ok {
			endClosedChain(head)
		}
	}
	if parked == 0 {
		return
	}
	// A parked loop is not woken for its chain: this goroutine takes its
	// word and runs its turn, which starts the chain (reactor.X.PostRun, as
	// Execute does for one root; Post if the loop woke meanwhile). The
	// flows' first steps, most of a short flow, run here before Execute
	// returns, as the loop, and neither the loop's thread nor, later, the
	// waiter sleeps and is woken for them.
	for _, s := range b.shards[:b.used] {
		head := s.head
		if head == nil {
			continue
		}
		s.head, s.tail = nil, nil
		if !reactor.X.PostRun(s.r, startBatch, unsafe.Pointer(head), 0) {
			endClosedChain(head)
		}
	}
}

// endClosedChain ends each root of a chain whose reactor was found closed
// when it was posted: none of these flows can ever run.
func endClosedChain(head *root) {
	for rt := head; rt != nil; {
		x := rt.more.Load()
		next := x.batchNext
		x.batchNext = nil // as startBatchChain: Release does not clear a Batch's fields (extKept)
		rt.endClosed()
		rt = next
	}
}

// beginRun marks rt executing for a new run and returns the run's
// generation; false if it is executing already (Execute's first half).
func (rt *root) beginRun() (uint64, bool) {
	for {
		v := rt.run.Load()
		if v&runActive != 0 {
			return 0, false
		}
		g := v>>runGenShift + 1
		if rt.run.CompareAndSwap(v, g<<runGenShift|runActive) {
			return g, true
		}
	}
}

// startBatch is the one task of a Batch's shard on its loop: it starts
// the chain of roots arg heads, in order (startBatchChain).
func startBatch(arg unsafe.Pointer, _ uint64) { startBatchChain((*root)(arg)) }

// startBatchChain readies each root of the chain from head, as startRoot
// does for one. The next link is read before the root starts: a root
// with nothing to run ends (and may be released) at once. Loop only.
func startBatchChain(head *root) {
	for rt := head; rt != nil; {
		x := rt.more.Load()
		next := x.batchNext
		x.batchNext = nil
		b := x.batch
		if b != nil && !rt.started && rt.execGen() == b.entries[x.batchIdx].g {
			// prepareStartSlow, not prepareStart: a Batch's root has an
			// extension (x), which prepareStart's first test sends there.
			rt.e.prepareStartSlow(rt)
		}
		rt = next
	}
}

// batchEnded records the end of the flow of entry i of b (its args or
// its error, set by endRunWith before the root is detached) and counts
// it; the last end of the set wakes Wait. On the loop, or on the
// goroutine that found the reactor closed.
func (b *Batch) batchEnded(i int32) {
	s := b.entries[i].shard
	if s.left.Add(-1) == 0 && b.left.Add(-1) == 0 {
		b.done <- struct{}{} // one token per set; the previous one was taken by Wait
	}
}

// Wait blocks until every flow of the executed set has ended, then makes
// the results readable with Result. Like Promise.Wait it first helps: it
// runs a turn of each parked reactor of the set that still has flows of
// it (reactor.Assist), and looks for the end for a short while before it
// sleeps. Waiting on the loop of one of the set's reactors for flows that
// have not ended would deadlock, and panics, as Promise.Wait does. Wait
// without Execute returns at once.
func (b *Batch) Wait() {
	if b.state != batchExecuted {
		return
	}
	if b.live {
		if b.left.Load() != 0 {
			for _, s := range b.shards[:b.used] {
				if s.left.Load() != 0 && s.r.IsLoopGoroutine() {
					panic("engine: Batch.Wait on the loop's own goroutine (inside a callback, or on the goroutine driving a manual reactor) for flows that have not ended: it would deadlock, since only this goroutine can run them; drive the reactor first, or wait from another goroutine")
				}
			}
			b.assist()
		}
		<-b.done // the last end's token: sent once its count reached 0
	}
	b.state = batchBuilding
	b.waited = true
}

// assist is Promise.assist for a set: while flows of the set run, it
// runs turns of the parked reactors that have them, up to maxAssists per
// reactor, and looks for the end up to waitSpins times.
func (b *Batch) assist() {
	assists := 0
	for range waitSpins {
		if b.left.Load() == 0 {
			return
		}
		for _, s := range b.shards[:b.used] {
			if s.left.Load() != 0 && !s.r.Manual() && assists < maxAssists*b.used && s.r.Assist() {
				assists++
			}
		}
	}
}

// Result returns the result of the root Add gave index i, as Promise.Wait
// does: the values of its flow's last success, or an *Error (Canceled for
// a canceled flow). Valid after Wait until the next Add or Execute; the
// *Args belongs to the Batch until then. An index out of range, or a set
// not waited for, is an InternalError.
func (b *Batch) Result(i int) (*Args, error) {
	if !b.waited {
		return nil, &Error{Code: InternalError, Info: "Batch.Result before Wait"}
	}
	if i < 0 || i >= len(b.entries) {
		return nil, &Error{Code: InternalError, Info: "Batch.Result: no such index"}
	}
	ent := &b.entries[i]
	if ent.err != nil {
		return nil, ent.err
	}
	return &ent.args, nil
}

// setResult stores the end of entry i's flow, as endRunWith does for a
// Promise: before the flow is detached (its args are still there).
func (b *Batch) setResult(i int32, rt *root, code string) {
	ent := &b.entries[i]
	if code == "" {
		ent.args = rt.Steps.fl.args // on the loop; an end off the loop (closed reactor) is never a success
	} else {
		ent.err = &Error{Code: code, Info: rt.state.ErrorInfo}
	}
}
