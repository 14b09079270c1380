package syncprim

import (
	"sync"
	"sync/atomic"

	"github.com/asyncsteps/asyncsteps/engine"
)

// Mutex lets at most max flows into its critical section at once, which may
// span many steps (spec 2.3). The others wait in a strict FIFO queue of at
// most maxQueue flows; past that a newcomer fails with DefenseRejected.
//
// The zero Mutex is ready to use, like sync.Mutex's: one flow at a time,
// an unlimited queue (NewMutex(1, 0), the spec's Mutex()). A Mutex must not
// be copied after first use.
type Mutex struct {
	gate // count = holders
	// lock is the uncontended path: a section that finds a free slot and
	// nobody queued is one step, with no per-call state (engine.AddLocked).
	lock engine.Lock[Mutex]
	// free holds up to maxFreeNodes nodes for the next waiters (takeNode),
	// linked by next. Under the gate's lock.
	free  *waiter
	nfree int
	// ready: lock is set up (newMutex, or a zero Mutex's first Sync).
	// Atomic: a zero Mutex may be first used by flows of several reactors
	// at once.
	ready atomic.Bool
}

// NewMutex returns a Mutex for max concurrent flows (at least 1) and a
// queue of at most maxQueue waiting flows: 0 (or Unlimited) for no limit,
// NoQueue for none.
//
// Queue lengths (maxQueue): see the package doc, "Queue lengths".
func NewMutex(max, maxQueue int) *Mutex {
	return newMutex(max, queueLimit(maxQueue))
}

func newMutex(max, maxQueue int) *Mutex {
	if max < 1 {
		max = 1
	}
	m := &Mutex{gate: gate{max: uint32(max), maxQueue: int64(maxQueue)}}
	m.lock.Init(m, mutexTry, mutexLeave, mutexSlow)
	m.ready.Store(true)
	return m
}

// Sync implements engine.Sync: f runs inside the section; see the package doc.
func (m *Mutex) Sync(as *engine.Steps, f engine.ExecFunc, onerror engine.ErrorFunc) {
	if !m.ready.Load() {
		m.setUpZero()
	}
	engine.AddLocked(as, &m.lock, f, onerror)
}

// zeroSetUp serialises the set-up of zero Mutexes: each takes it once, at
// its first Sync.
var zeroSetUp sync.Mutex

// setUpZero makes a zero Mutex a NewMutex(1, 0) in place.
//
//go:noinline
func (m *Mutex) setUpZero() {
	zeroSetUp.Lock()
	defer zeroSetUp.Unlock()
	if m.ready.Load() {
		return
	}
	if m.max == 0 {
		m.max, m.maxQueue = 1, Unlimited
	}
	m.lock.Init(m, mutexTry, mutexLeave, mutexSlow)
	m.ready.Store(true)
}

// mutexTry is the Lock's Enter: a free slot and nobody queued let the flow
// in at once, and the section runs as the Sync step itself (the Lock
// records the hold: Holds(m) is true inside). A reentrance takes the slow
// path, which passes it through without counting it; with max 1 the flow
// that holds m finds no free slot, so only a larger Mutex asks first.
func mutexTry(as *engine.Steps, m *Mutex) bool {
	if m.max > 1 && as.Holding() && as.Holds(m) {
		return false
	}
	_, ok := m.tryEnter(0)
	return ok
}

// mutexLeave is the Lock's Leave: the section entered by mutexTry ended.
func mutexLeave(_ *engine.Steps, m *Mutex) { m.release() }

// mutexSlow is the Lock's slow path: the step queues (or passes through a
// reentrance, or is rejected).
//
// A queued step waits as itself (engine.WaitBound, Lock.Wait): the release
// that hands it m passes its External, and the step runs again as the
// entered section, f as its callback and mutexLeave when it ends, as if
// mutexTry had let it in. No step for the wait, none for the section, no
// finally, and no per-call record: the step waits on a node m owns
// (takeNode), bound to the step for its cancel handler. The queued path
// costs the queue, the node and the External round trip.
//
// The rare paths (a reentrance, a flow let in after all) make the step's
// call record as mutexEnter's queued path does.
func mutexSlow(as *engine.Steps, m *Mutex, f engine.ExecFunc) {
	if as.Holds(m) {
		c := mutexCall(as, m, f)
		mutexEnter(as, &c.spec, c) // a reentrance passes through
		return
	}
	switch m.enqueueWait(as, f) {
	case enqWaiting:
		// Until the section starts: canceled or timed out, the step
		// leaves the queue (or gives back m if it was let in
		// meanwhile): mutexCancelWaiting, set by WaitBound.
	case enqRejected:
		as.Error(engine.DefenseRejected, rejectInfo(&spec{m: m}, false))
	default:
		// Let in after all (a holder left between mutexTry and the
		// lock): the section is the step's sub-step, as in mutexEnter.
		c := mutexCall(as, m, f)
		c.mw.state = holding
		as.ForwardArgs()
		as.SetFinally(mutexCancelQueued)
		as.Hold(m)
		as.Add(f)
	}
}

// mutexCall makes the per-run state of a Mutex step whose section is a
// sub-step (mutexSlow's rare paths): Stack memory rebound to the step.
func mutexCall(as *engine.Steps, m *Mutex, f engine.ExecFunc) *call {
	c := engine.Stack[call](as)
	c.m, c.f = m, f
	engine.Rebind(as, c)
	return c
}

// enqueueWait's outcomes.
const (
	enqWaiting  = iota // queued: the step waits on a node (WaitBound)
	enqIn              // room after all: the step holds m
	enqRejected        // the queue is full
)

// enqueueWait is gate.enqueue for a Mutex step that waits as itself: the
// waiter's External is made under the gate's lock, before its node can be found in the
// queue, so the release that pops it always finds it.
func (m *Mutex) enqueueWait(as *engine.Steps, f engine.ExecFunc) int {
	s := m.state.Load() &^ lockBit // lockWord, inlined
	if !m.state.CompareAndSwap(s, s|lockBit) {
		s = m.lockWordSlow()
	}
	n, q := unpack(s)
	if n < m.max && q == 0 {
		m.unlockWord(s + 1)
		return enqIn
	}
	if m.maxQueue >= 0 && int64(q) >= m.maxQueue {
		m.rejected.Add(1)
		m.unlockWord(s)
		return enqRejected
	}
	w := m.takeNode()
	w.ext = engine.WaitBound(as, &m.lock, f, w, mutexCancelWaiting)
	w.owner = as
	w.state = queued
	m.q.push(w)
	m.unlockWord(s + oneQueued)
	return enqWaiting
}

// maxFreeNodes bounds the nodes a Mutex keeps for its next waiters: a
// queue that grew past it in a burst gives the rest back to the GC as it
// drains.
const maxFreeNodes = 64

// takeNode returns a free node of m's, or a new one. Under the gate's lock.
//
// A node is m's, not the waiting step's: the release that pops it frees it
// at once (freeNode), before the waiter even knows. The step stays bound to
// it only for its cancel handler, which must tell "still queued" from
// "handed m": it finds its node queued and owned by its own step in the
// first case, and free or another step's in the second. The step is the
// identity: it cannot wait twice at once, so a node reused meanwhile is
// always another step's.
func (m *Mutex) takeNode() *waiter {
	w := m.free
	if w == nil {
		return &waiter{m: m}
	}
	m.free, w.next = w.next, nil
	m.nfree--
	return w
}

// freeNode gives back a node m owns that has left the queue. Under the gate's lock.
func (m *Mutex) freeNode(w *waiter) {
	w.ext, w.owner, w.state = engine.External{}, nil, idle
	if m.nfree < maxFreeNodes {
		w.next = m.free
		m.free = w
		m.nfree++
	}
}

// mutexCancelWaiting is the cancel handler of a step that waits in m's
// queue on a node (mutexSlow, bound by WaitBound): it leaves the queue, or
// gives m back when the release had already handed it m and the cancel
// came before its section started. Once the section starts the handler is
// gone and mutexLeave releases.
func mutexCancelWaiting(as *engine.Steps) {
	w := engine.Bound[waiter](as)
	m := w.m // a node's m never changes
	s := m.lockWord()
	if w.owner == as && w.state == queued {
		m.q.remove(w)
		m.freeNode(w)
		m.unlockWord(s - oneQueued)
		return
	}
	m.unlockWord(s)
	m.release() // handed m (the node was popped and freed): give it on
}

// mutexEnter enters m for the running step, or queues it. c is the step's
// call when its bound state already is one (mutexSlow), nil when it is a
// bare spec (a Limiter's): then a call is made if the step queues.
func mutexEnter(as *engine.Steps, sp *spec, c *call) {
	m := sp.m
	as.ForwardArgs()
	if as.Holds(m) {
		// Reentrance (spec 1.11.4): the flow already holds m.
		addSection(as, sp, true)
		return
	}
	// The slot is given back by a finally handler when this step ends,
	// however it ends: no leave step after the section.
	if _, ok := m.tryEnter(0); ok {
		as.SetFinally(mutexCancelHeld)
		as.Hold(m)
		addSection(as, sp, true)
		return
	}
	if c == nil {
		c = queueCall(as, sp)
	}
	_, wait, ok := m.enqueue(&c.mw, 0)
	if !ok {
		as.Error(engine.DefenseRejected, rejectInfo(sp, false))
	}
	as.SetFinally(mutexCancelQueued)
	if wait {
		engine.AddWith(as, mutexWait, c)
	}
	as.Hold(m)
	addSection(as, sp, !wait)
}

func mutexWait(as *engine.Steps, c *call) { c.m.wait(as, &c.mw) }

// mutexCancelHeld leaves the section of a Sync step that entered at once,
// when the step ends: its section is done, an error unwinds through it, or
// its flow is canceled.
func mutexCancelHeld(as *engine.Steps) {
	m := engine.Bound[spec](as).m
	as.Unhold(m)
	m.release()
}

// mutexCancelQueued leaves the queue, or the section it was let into, for a
// Sync step that had to queue, when the step ends.
func mutexCancelQueued(as *engine.Steps) {
	c := engine.Bound[call](as)
	as.Unhold(c.m)
	if c.m.unqueue(&c.mw) == holding {
		c.m.release()
	}
}

// release gives up a slot: handed to the first waiter if there is one.
func (m *Mutex) release() {
	for {
		s := m.state.Load()
		if s>>32 == 0 { // nobody queued, not locked (a Mutex has no armedBit)
			if m.state.CompareAndSwap(s, s-1) {
				return
			}
			continue
		}
		if _, q := unpack(s); q != 0 {
			break
		}
		m.unlocked() // an enqueue's lock, perhaps about to queue: see it first
	}
	s := m.state.Load() &^ lockBit // lockWord, inlined
	if !m.state.CompareAndSwap(s, s|lockBit) {
		s = m.lockWordSlow()
	}
	next := m.q.pop()
	if next == nil {
		// The waiter left (canceled) between the load and the lock.
		m.unlockWord(s - 1) // holders--
		return
	}
	ext := next.ext
	if next.m != nil {
		m.freeNode(next) // a waiter of mutexSlow: see takeNode
	} else {
		next.state = holding // a Limiter's: its step reads it (gate.wait, unqueue)
	}
	m.unlockWord(s - oneQueued) // queued--, holders unchanged: handed over
	resume(ext)
}

// Stats is a snapshot of a sync object, for tests and monitoring.
type Stats struct {
	Holders  int    // Mutex: flows inside; Throttle: entries this period
	Queued   int    // flows waiting
	Rejected uint64 // flows refused with DefenseRejected because the queue was full, since creation
}
