package syncprim

import (
	"math"
	"runtime"
	"sync/atomic"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/storerel"
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
// and a FIFO queue changed under the word's own lock bit, so a leave that
// sees nobody queued and an enqueue that sees the gate full cannot both
// succeed.
//
// The lock bit (lockBit, taken by lockWord) guards the queue, the waiters'
// state and ext, and a Mutex's free nodes. While it is set nobody else
// changes the word: every CAS outside the lock expects the bit clear, so
// the holder gives the lock up by storing the word it computed (unlockWord),
// a release-only store (internal/storerel). A queued section so costs two
// locked instructions (the enqueue's lock and the release's) where a
// sync.Mutex beside the word cost six (Lock, the word's CAS or Add and
// Unlock, on each side). The holder never blocks inside: the sections
// under the bit are a few loads and stores, one External made or read.
type gate struct {
	max      uint32
	maxQueue int64 // < 0: unlimited; 0: no waiting (Limiter)
	state    atomic.Uint64
	q        waitQueue
	// rejected counts newcomers refused for a full queue. Atomic, as
	// Stats reads it from any goroutine; touched only when rejecting,
	// never on the entering path.
	rejected atomic.Uint64
}

// lockWord takes the gate's lock bit and returns the state word it found,
// the bit clear. The caller gives it up with unlockWord, storing the word it
// computed from that one. (Too dear for the inliner: the hot callers,
// Mutex.enqueueWait and Mutex.release, write its fast path out.)
func (g *gate) lockWord() uint64 {
	s := g.state.Load() &^ lockBit // set: the CAS fails
	if g.state.CompareAndSwap(s, s|lockBit) {
		return s
	}
	return g.lockWordSlow()
}

// lockWordSlow is lockWord's contended path, out of line so that lockWord
// inlines.
//
//go:noinline
func (g *gate) lockWordSlow() uint64 {
	for {
		s := g.unlocked()
		if g.state.CompareAndSwap(s, s|lockBit) {
			return s
		}
	}
}

// unlockWord gives the lock bit up, the state word becoming s (lockBit clear).
func (g *gate) unlockWord(s uint64) { storerel.Uint64(&g.state, s) }

// unlocked waits until the lock bit is clear and returns the word then.
// The holder is a few stores from giving it up: spin on loads a while,
// then yield, in case it was preempted inside (the spinner may be the
// loop that took its CPU).
//
//go:noinline
func (g *gate) unlocked() uint64 {
	for i := 0; ; i++ {
		s := g.state.Load()
		if s&lockBit == 0 {
			return s
		}
		if i >= unlockedSpins {
			runtime.Gosched()
		}
	}
}

// unlockedSpins is how many loads unlocked spins before it yields.
const unlockedSpins = 64

// tryEnter counts an entry if there is room and nobody waits, or-ing mark
// into the state; it returns the state it replaced. It fails, too, while
// the lock bit is set: the holder may be about to queue a flow, and
// every caller's next move is the enqueue, which takes the lock, looks
// again and lets the flow in if there is room after all.
func (g *gate) tryEnter(mark uint64) (prev uint64, ok bool) {
	for {
		s := g.state.Load()
		if uint32(s) >= g.max || s&(queuedMask<<32|lockBit) != 0 { // full, queued or locked
			return s &^ lockBit, false
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
		if c >= g.max || q != 0 || s&lockBit != 0 { // full, queued or locked, as tryEnter
			return 0, s &^ lockBit, false
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
	s := g.lockWord()
	n, q := unpack(s)
	if n < g.max && q == 0 {
		w.state = holding
		g.unlockWord((s + 1) | mark)
		return s, false, true
	}
	if g.maxQueue >= 0 && int64(q) >= g.maxQueue {
		g.rejected.Add(1)
		g.unlockWord(s)
		return s, false, false
	}
	w.state = queued
	g.q.push(w)
	g.unlockWord(s + oneQueued)
	return s, true, true
}

// wait is the wait step's body: it passes at once if w was let in already,
// or leaves its External for whoever lets it in.
func (g *gate) wait(as *engine.Steps, w *waiter) {
	ext := as.External()
	s := g.lockWord()
	if w.state == holding {
		g.unlockWord(s)
		as.Pass()
		return
	}
	w.ext = ext
	g.unlockWord(s)
}

// unqueue takes a canceled w out of the queue; it reports w's state before.
func (g *gate) unqueue(w *waiter) uint8 {
	s := g.lockWord()
	st := w.state
	if st == queued {
		g.q.remove(w)
		s -= oneQueued
	}
	w.state = idle
	g.unlockWord(s)
	return st
}

// Stats returns a snapshot of the gate.
func (g *gate) Stats() Stats {
	n, q := unpack(g.state.Load())
	return Stats{Holders: int(n), Queued: int(q), Rejected: g.rejected.Load()}
}

// unpack splits a state word: count in the low 32 bits, queue length in
// the 30 above (more than 2^30 queued flows would need terabytes of
// steps), then lockBit and a Throttle's armedBit.
func unpack(s uint64) (count, queued uint32) { return uint32(s), uint32(s>>32) & queuedMask }

const (
	oneQueued  = 1 << 32
	queuedMask = 1<<30 - 1
	lockBit    = 1 << 62 // the gate's lock: see gate
	armedBit   = 1 << 63
)
