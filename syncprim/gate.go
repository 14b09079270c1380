package syncprim

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/asyncsteps/asyncsteps/engine"
)

// Unlimited is accepted wherever a queue length is: no limit.
// See the package doc, "Queue lengths".
const Unlimited = -1

// NoQueue is accepted wherever a queue length is: nobody may wait; a flow
// that cannot enter at once fails with DefenseRejected. It is how NewMutex
// and NewThrottle say the spec's max_queue=0, their own 0 being the spec's
// null (unlimited). See the package doc, "Queue lengths".
const NoQueue = math.MinInt

// queueLimit is the gate's maxQueue for a NewMutex or NewThrottle
// maxQueue: 0 and negatives are unlimited (the spec's null), NoQueue none.
func queueLimit(maxQueue int) int {
	switch {
	case maxQueue == NoQueue:
		return 0
	case maxQueue <= 0:
		return Unlimited
	}
	return maxQueue
}

// limiterQueue is the gate's maxQueue for a LimiterOptions queue length:
// 0 and NoQueue are none (the spec's default), other negatives unlimited.
func limiterQueue(n int) int {
	switch {
	case n == NoQueue:
		return 0
	case n < 0:
		return Unlimited
	}
	return n
}

// Waiter states, guarded by the owning object's mutex.
const (
	idle    = iota // not queued, holds nothing
	queued         // in the object's queue
	holding        // holds (Mutex) or was let in (Throttle)
)

// waiter is one flow queued on an object. A Throttle's or a Limiter's is
// part of the per-call state, so it lives as long as the step that called
// Sync; a Mutex's own queued path (mutexSlow) waits on a node the Mutex
// owns instead (m set; see Mutex.takeNode).
type waiter struct {
	ext        engine.External // the wait step's; zero until that step runs
	prev, next *waiter         // next also links a Mutex's free nodes
	m          *Mutex          // a node's Mutex, set once; nil in a call's waiter
	owner      *engine.Steps   // a node's waiting step; nil while the node is free
	state      uint8
}

// waitQueue is an intrusive FIFO of waiters. Guarded by the object's mutex.
type waitQueue struct{ head, tail *waiter }

func (q *waitQueue) push(w *waiter) {
	w.prev, w.next = q.tail, nil
	if q.tail == nil {
		q.head = w
	} else {
		q.tail.next = w
	}
	q.tail = w
}

func (q *waitQueue) pop() *waiter {
	w := q.head
	if w != nil {
		q.remove(w)
	}
	return w
}

func (q *waitQueue) remove(w *waiter) {
	if w.prev == nil {
		q.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		q.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
}

// spec is what one Sync call adds: the object(s) and the section. It is
// immutable once added, so copies of the step (CopyFrom, Clone) may share it.
type spec struct {
	m *Mutex
	t *Throttle
	f engine.ExecFunc
}

// call is the state of one run of a Sync step that had to queue: the spec
// and the waiter. It is Stack memory of the step that enters the object,
// rebound to that step (engine.Rebind), so it lives exactly as long as the
// critical section and copies of the step never share it. The uncontended
// path needs none: the step stays bound to its spec.
type call struct {
	spec
	mw waiter // on m
	tw waiter // on t
}

// queueCall makes the per-run state of a step that has to queue.
func queueCall(as *engine.Steps, sp *spec) *call {
	c := engine.Stack[call](as)
	c.spec = *sp
	engine.Rebind(as, c)
	return c
}

// addSection adds the section's content as the running step's sub-step:
// f, or for a Limiter, inside its Mutex, the step that passes its Throttle.
// A Limiter whose Mutex let the flow in at once (now) tries its Throttle at
// once too, and adds f directly when that lets it in: one step fewer.
func addSection(as *engine.Steps, sp *spec, now bool) {
	if sp.t != nil && sp.m != nil {
		if now {
			if prev, ok := sp.t.tryEnter(armedBit); ok {
				if prev&armedBit == 0 {
					sp.t.arm()
				}
				as.Add(sp.f)
				return
			}
		}
		engine.AddWith(as, throttleEnter, sp)
		return
	}
	as.Add(sp.f)
}

// resume lets a waiter in: its wait step ends keeping the values it received.
func resume(ext engine.External) {
	if ext != (engine.External{}) {
		ext.Pass()
	}
}

// gate is the admission core shared by Mutex and Throttle: a state word
// count | queued<<32 (plus the caller's mark bits), CASed by the fast path,
// and a FIFO queue changed under mu in the same word, so a leave that sees
// nobody queued and an enqueue that sees the gate full cannot both succeed.
type gate struct {
	max      uint32
	maxQueue int64 // < 0: unlimited; 0: no waiting (Limiter)
	state    atomic.Uint64
	mu       sync.Mutex
	q        waitQueue
	// rejected counts newcomers refused for a full queue. Atomic, as
	// Stats reads it from any goroutine; touched only when rejecting,
	// never on the entering path.
	rejected atomic.Uint64
}

// tryEnter counts an entry if there is room and nobody waits, or-ing mark
// into the state; it returns the state it replaced.
func (g *gate) tryEnter(mark uint64) (prev uint64, ok bool) {
	for {
		s := g.state.Load()
		n, q := unpack(s)
		if n >= g.max || q != 0 {
			return s, false
		}
		if g.state.CompareAndSwap(s, (s+1)|mark) {
			return s, true
		}
	}
}

// tryEnterN is tryEnter for up to n entries at once: as many as there is
// room for, at least one, if nobody waits. It returns how many it counted
// and the state it replaced.
func (g *gate) tryEnterN(n int, mark uint64) (k int, prev uint64, ok bool) {
	for {
		s := g.state.Load()
		c, q := unpack(s)
		if c >= g.max || q != 0 {
			return 0, s, false
		}
		room := g.max - c
		if n < int(room) {
			room = uint32(n)
		}
		if g.state.CompareAndSwap(s, (s+uint64(room))|mark) {
			return int(room), s, true
		}
	}
}

// enqueue queues w (wait), or enters if there is room after all. It reports
// ok=false when the queue is full, and the state it replaced.
func (g *gate) enqueue(w *waiter, mark uint64) (prev uint64, wait, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		s := g.state.Load()
		n, q := unpack(s)
		if n < g.max && q == 0 {
			if g.state.CompareAndSwap(s, (s+1)|mark) {
				w.state = holding
				return s, false, true
			}
			continue
		}
		if g.maxQueue >= 0 && int64(q) >= g.maxQueue {
			g.rejected.Add(1)
			return s, false, false
		}
		if g.state.CompareAndSwap(s, s+oneQueued) {
			w.state = queued
			g.q.push(w)
			return s, true, true
		}
	}
}

// wait is the wait step's body: it passes at once if w was let in already,
// or leaves its External for whoever lets it in.
func (g *gate) wait(as *engine.Steps, w *waiter) {
	ext := as.External()
	g.mu.Lock()
	if w.state == holding {
		g.mu.Unlock()
		as.Pass()
		return
	}
	w.ext = ext
	g.mu.Unlock()
}

// unqueue takes a canceled w out of the queue; it reports w's state before.
func (g *gate) unqueue(w *waiter) uint8 {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := w.state
	if st == queued {
		g.q.remove(w)
		g.state.Add(^uint64(oneQueued - 1)) // queued--
	}
	w.state = idle
	return st
}

// Stats returns a snapshot of the gate.
func (g *gate) Stats() Stats {
	n, q := unpack(g.state.Load())
	return Stats{Holders: int(n), Queued: int(q), Rejected: g.rejected.Load()}
}

// unpack splits a state word: count in the low 32 bits, queue length above.
func unpack(s uint64) (count, queued uint32) { return uint32(s), uint32(s>>32) & 0x7fffffff }

const (
	oneQueued = 1 << 32
	armedBit  = 1 << 63
)
