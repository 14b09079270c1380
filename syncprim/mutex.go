package syncprim

import (
	"sync"
	"sync/atomic"

	"github.com/asyncsteps/asyncsteps/engine"
)

// Mutex lets at most max flows into its critical section at once, which may
// span many steps (spec 2.3). The others wait in a strict FIFO queue of at
// most maxQueue flows; past that a newcomer fails with DefenseRejected.
type Mutex struct {
	max      uint32
	maxQueue int64 // < 0: unlimited; 0: no waiting (Limiter)

	// state is holders | queued<<32. The fast paths CAS it; queue changes
	// are made under mu, in the same word, so a release that sees nobody
	// queued and an enqueue that sees the mutex full cannot both succeed.
	state atomic.Uint64
	mu    sync.Mutex
	q     waitQueue
}

// NewMutex returns a Mutex for max concurrent flows (at least 1) and a
// queue of at most maxQueue waiting flows (0 or Unlimited: no limit, the
// spec's null).
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
	return &Mutex{max: uint32(max), maxQueue: int64(maxQueue)}
}

// Sync implements engine.Sync: f runs inside the section; see the package doc.
func (m *Mutex) Sync(as *engine.Steps, f engine.ExecFunc, onerror engine.ErrorFunc) {
	addSync(as, m, nil, f, onerror)
}

// tryAcquire takes a slot if one is free and nobody is queued.
func (m *Mutex) tryAcquire() bool {
	for {
		s := m.state.Load()
		n, q := unpack(s)
		if n >= m.max || q != 0 {
			return false
		}
		if m.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

func mutexEnter(as *engine.Steps, c *call) {
	m := c.m
	if as.Holds(m) {
		// Reentrance (spec 1.11.4): the flow already holds m.
		as.ForwardArgs()
		addSection(as, c)
		return
	}
	wait := false
	if !m.tryAcquire() {
		var ok bool
		if wait, ok = m.enqueue(&c.mw); !ok {
			as.Error(engine.DefenseRejected, "mutex queue is full")
		}
	} else {
		c.mw.state = holding
	}
	as.Hold(m)
	as.SetCancel(mutexCancel)
	as.ForwardArgs()
	if wait {
		engine.AddWith(as, mutexWait, c)
	}
	addSection(as, c)
	engine.AddWith(as, mutexLeave, c)
}

// enqueue queues w (wait), or takes a slot that came free meanwhile. It
// reports ok=false when the queue is full.
func (m *Mutex) enqueue(w *waiter) (wait, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		s := m.state.Load()
		n, q := unpack(s)
		if n < m.max && q == 0 {
			if m.state.CompareAndSwap(s, s+1) {
				w.state = holding
				return false, true
			}
			continue
		}
		if m.maxQueue >= 0 && int64(q) >= m.maxQueue {
			return false, false
		}
		if m.state.CompareAndSwap(s, s+oneQueued) {
			w.state = queued
			m.q.push(w)
			return true, true
		}
	}
}

// mutexWait waits until the waiter is handed a slot.
func mutexWait(as *engine.Steps, c *call) {
	ext := as.External()
	m := c.m
	m.mu.Lock()
	if c.mw.state == holding {
		m.mu.Unlock()
		as.Pass()
		return
	}
	c.mw.ext = ext
	m.mu.Unlock()
}

func mutexLeave(as *engine.Steps, c *call) {
	as.Unhold(c.m)
	c.m.release(&c.mw)
	as.Pass()
}

// mutexCancel leaves the section, or the queue, when an error unwinds
// through the Sync step or the flow is canceled.
func mutexCancel(as *engine.Steps) {
	c := engine.Bound[call](as)
	m := c.m
	as.Unhold(m)
	m.mu.Lock()
	switch c.mw.state {
	case queued:
		m.q.remove(&c.mw)
		c.mw.state = idle
		m.state.Add(^uint64(oneQueued - 1)) // queued--
		m.mu.Unlock()
	case holding:
		m.mu.Unlock()
		m.release(&c.mw)
	default:
		m.mu.Unlock()
	}
}

// release gives up w's slot: handed to the first waiter if there is one.
func (m *Mutex) release(w *waiter) {
	w.state = idle
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
	Holders int // Mutex: flows inside; Throttle: entries this period
	Queued  int // flows waiting
}

// Stats returns a snapshot of m.
func (m *Mutex) Stats() Stats {
	n, q := unpack(m.state.Load())
	return Stats{Holders: int(n), Queued: int(q)}
}
