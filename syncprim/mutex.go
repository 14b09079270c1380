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
// reentrance, or is rejected), with per-run state in its Stack memory.
//
// The fast path (mutexTry) failed, so the step almost always queues: its
// state is made as the queued call at once (one Stack record, not a spec
// and then a call with a copy of it). A call begins with its spec, so the
// finally of a step that got in after all reads it as a spec.
//
// A queued step waits as itself (Lock.Wait): the release that hands it m
// passes its External, and the step runs again as the entered section, f
// as its callback and mutexLeave when it ends, as if mutexTry had let it
// in. No step for the wait, none for the section, no finally: the queued
// path costs one Stack record, the queue and the External round trip.
func mutexSlow(as *engine.Steps, m *Mutex, f engine.ExecFunc) {
	c := engine.Stack[call](as)
	c.m, c.f = m, f
	engine.Rebind(as, c)
	if as.Holds(m) {
		mutexEnter(as, &c.spec, c) // a reentrance passes through
		return
	}
	wait, ok := m.enqueueWait(as, c)
	switch {
	case !ok:
		as.Error(engine.DefenseRejected, rejectInfo(&c.spec, false))
	case wait:
		// Until the section starts: canceled or timed out, the step
		// leaves the queue (or gives back m if it was let in meanwhile).
		as.SetCancel(mutexCancelWaiting)
	default:
		// Let in after all (a holder left between mutexTry and the
		// lock): the section is the step's sub-step, as in mutexEnter.
		as.ForwardArgs()
		as.SetFinally(mutexCancelQueued)
		as.Hold(m)
		as.Add(f)
	}
}

// enqueueWait is gate.enqueue for a Mutex step that waits as itself
// (Lock.Wait): the waiter's External is made under mu, before the waiter
// can be found in the queue, so the release that pops it always finds it.
func (m *Mutex) enqueueWait(as *engine.Steps, c *call) (wait, ok bool) {
	w := &c.mw
	m.mu.Lock()
	for {
		s := m.state.Load()
		n, q := unpack(s)
		if n < m.max && q == 0 {
			if m.state.CompareAndSwap(s, s+1) {
				w.state = holding
				m.mu.Unlock()
				return false, true
			}
			continue
		}
		if m.maxQueue >= 0 && int64(q) >= m.maxQueue {
			m.rejected.Add(1)
			m.mu.Unlock()
			return false, false
		}
		if m.state.CompareAndSwap(s, s+oneQueued) {
			w.ext = m.lock.Wait(as, c.f)
			w.state = queued
			m.q.push(w)
			m.mu.Unlock()
			return true, true
		}
	}
}

// mutexCancelWaiting is the cancel handler of a step that waits in m's
// queue (mutexSlow): it leaves the queue, or gives m back when the release
// had already let it in and the cancel came before its section started.
// Once the section starts the handler is gone and mutexLeave releases.
func mutexCancelWaiting(as *engine.Steps) {
	c := engine.Bound[call](as)
	if c.m.unqueue(&c.mw) == holding {
		c.m.release()
	}
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
		if _, q := unpack(s); q == 0 {
			if m.state.CompareAndSwap(s, s-1) {
				return
			}
			continue
		}
		break
	}
	m.mu.Lock()
	next := m.q.pop()
	if next == nil {
		// The waiter left (canceled) between the load and the lock.
		m.state.Add(^uint64(0)) // holders--
		m.mu.Unlock()
		return
	}
	next.state = holding
	ext := next.ext
	m.state.Add(^uint64(oneQueued - 1)) // queued--, holders unchanged: handed over
	m.mu.Unlock()
	resume(ext)
}

// Stats is a snapshot of a sync object, for tests and monitoring.
type Stats struct {
	Holders  int    // Mutex: flows inside; Throttle: entries this period
	Queued   int    // flows waiting
	Rejected uint64 // flows refused with DefenseRejected because the queue was full, since creation
}
