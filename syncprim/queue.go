package syncprim

import "github.com/asyncsteps/asyncsteps/engine"

// Unlimited is accepted wherever a queue length is: no limit.
const Unlimited = -1

// Waiter states, guarded by the owning object's mutex.
const (
	idle    = iota // not queued, holds nothing
	queued         // in the object's queue
	holding        // holds (Mutex) or was let in (Throttle)
)

// waiter is one flow queued on an object: part of the per-call state, so it
// lives as long as the step that called Sync.
type waiter struct {
	ext        engine.External // the wait step's; zero until that step runs
	prev, next *waiter
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

// call is the state of one run of a Sync step: the spec and the waiters. It
// is Stack memory of the step that enters the object, rebound to that step,
// so it lives exactly as long as the critical section.
type call struct {
	spec
	mw waiter // on m
	tw waiter // on t
}

// addSync adds the step that enters the object(s) of sp, with onerror as its
// handler (nil: none). Every object's Sync is this.
func addSync(as *engine.Steps, m *Mutex, t *Throttle, f engine.ExecFunc, onerror engine.ErrorFunc) {
	sp := engine.Local[spec](as)
	sp.m, sp.t, sp.f = m, t, f
	engine.AddWith(as, enter, sp, onerror)
}

// enter starts one run: per-run state, then the first object.
func enter(as *engine.Steps, sp *spec) {
	c := engine.Stack[call](as)
	c.spec = *sp
	engine.Rebind(as, c)
	if c.m != nil {
		mutexEnter(as, c)
		return
	}
	throttleEnter(as, c)
}

// addSection adds the section's content, f, as the running step's sub-step.
func addSection(as *engine.Steps, c *call) {
	if c.t != nil && c.m != nil {
		// A Limiter: inside the Mutex, pass the Throttle too.
		engine.AddWith(as, throttleEnter, c)
		return
	}
	as.Add(c.f)
}

// resume lets a waiter in: its wait step ends keeping the values it received.
func resume(ext engine.External) {
	if ext != (engine.External{}) {
		ext.Pass()
	}
}

// unpack splits a state word: count in the low 32 bits, queue length above.
func unpack(s uint64) (count, queued uint32) { return uint32(s), uint32(s>>32) & 0x7fffffff }

const (
	oneQueued = 1 << 32
	armedBit  = 1 << 63
)
