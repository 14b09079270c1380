package syncprim

import "github.com/asyncsteps/asyncsteps/engine"

// Mutex lets at most max flows into its critical section at once, which may
// span many steps (spec 2.3). The others wait in a strict FIFO queue of at
// most maxQueue flows; past that a newcomer fails with DefenseRejected.
type Mutex struct {
	gate // count = holders
}

// NewMutex returns a Mutex for max concurrent flows (at least 1) and a
// queue of at most maxQueue waiting flows.
//
// Queue lengths: for NewMutex and NewThrottle 0 means unlimited (the spec's null); for LimiterOptions.MaxQueue and Burst 0 means no queue (the spec's default); Unlimited (or any negative) means no limit everywhere.
func NewMutex(max, maxQueue int) *Mutex {
	if maxQueue <= 0 {
		maxQueue = -1
	}
	return newMutex(max, maxQueue)
}

func newMutex(max, maxQueue int) *Mutex {
	if max < 1 {
		max = 1
	}
	return &Mutex{gate{max: uint32(max), maxQueue: int64(maxQueue)}}
}

// Sync implements engine.Sync: f runs inside the section; see the package doc.
func (m *Mutex) Sync(as *engine.Steps, f engine.ExecFunc, onerror engine.ErrorFunc) {
	addSync(as, m, nil, f, onerror)
}

func mutexEnter(as *engine.Steps, sp *spec) {
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
	c := queueCall(as, sp)
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
