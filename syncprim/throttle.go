package syncprim

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Throttle lets at most max flows into its section per period (spec 2.4).
// A period starts with the first entry after an idle one; the others wait in
// a FIFO queue for the next period, at most maxQueue of them (past that:
// DefenseRejected). Its period timer runs on r's wheel: no goroutine.
type Throttle struct {
	r        *reactor.Reactor
	max      uint32
	period   time.Duration
	maxQueue int64 // < 0: unlimited; 0: no waiting (Limiter)

	// state is entries | queued<<32 | armedBit: entries this period, flows
	// waiting, and whether the period timer is running.
	state atomic.Uint64
	mu    sync.Mutex
	q     waitQueue

	grants []engine.External // the owner loop's scratch for waking waiters
}

// NewThrottle returns a Throttle of max entries (at least 1) per period
// (1s if <= 0), with a queue of at most maxQueue flows (0 or Unlimited: no
// limit). Its timer runs on r.
func NewThrottle(r *reactor.Reactor, max int, period time.Duration, maxQueue int) *Throttle {
	if maxQueue <= 0 {
		maxQueue = -1
	}
	return newThrottle(r, max, period, maxQueue)
}

func newThrottle(r *reactor.Reactor, max int, period time.Duration, maxQueue int) *Throttle {
	if max < 1 {
		max = 1
	}
	if period <= 0 {
		period = time.Second
	}
	return &Throttle{r: r, max: uint32(max), period: period, maxQueue: int64(maxQueue)}
}

// Sync implements engine.Sync: f runs once the flow is let in; see the package doc.
func (t *Throttle) Sync(as *engine.Steps, f engine.ExecFunc, onerror engine.ErrorFunc) {
	addSync(as, nil, t, f, onerror)
}

// tryEnter counts an entry if the period has room and nobody waits.
func (t *Throttle) tryEnter() bool {
	for {
		s := t.state.Load()
		n, q := unpack(s)
		if n >= t.max || q != 0 {
			return false
		}
		if t.state.CompareAndSwap(s, (s+1)|armedBit) {
			if s&armedBit == 0 {
				t.arm()
			}
			return true
		}
	}
}

// arm starts the period timer on the owner reactor.
func (t *Throttle) arm() {
	t.r.Post(throttleArm, unsafe.Pointer(t), 0)
}

func throttleArm(arg unsafe.Pointer, _ uint64) {
	t := (*Throttle)(arg)
	t.r.After(t.period, throttleTick, arg, 0)
}

// throttleTick ends a period on the owner loop: the next waiters, up to max,
// enter the new one.
func throttleTick(arg unsafe.Pointer, _ uint64) {
	t := (*Throttle)(arg)
	t.mu.Lock()
	g := t.grants[:0]
	for uint32(len(g)) < t.max {
		w := t.q.pop()
		if w == nil {
			break
		}
		w.state = holding
		g = append(g, w.ext)
	}
	n := uint64(len(g))
	for {
		s := t.state.Load()
		_, q := unpack(s)
		next := n | (uint64(q)-n)<<32
		if n > 0 {
			next |= armedBit
		}
		if t.state.CompareAndSwap(s, next) {
			break
		}
	}
	t.mu.Unlock()
	if n > 0 {
		t.r.After(t.period, throttleTick, arg, 0)
	}
	for i := range g {
		resume(g[i])
		g[i] = engine.External{}
	}
	t.grants = g[:0]
}

func throttleEnter(as *engine.Steps, c *call) {
	t := c.t
	as.ForwardArgs()
	if t.tryEnter() {
		as.Add(c.f)
		return
	}
	if !t.enqueue(&c.tw) {
		as.Error(engine.DefenseRejected, "throttle queue is full")
	}
	as.SetCancel(throttleCancel)
	engine.AddWith(as, throttleWait, c)
	as.Add(c.f)
}

// enqueue queues w, or lets it in if the period has room after all. It
// reports false when the queue is full.
func (t *Throttle) enqueue(w *waiter) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		s := t.state.Load()
		n, q := unpack(s)
		if n < t.max && q == 0 {
			if t.state.CompareAndSwap(s, (s+1)|armedBit) {
				if s&armedBit == 0 {
					t.arm()
				}
				w.state = holding
				return true
			}
			continue
		}
		if t.maxQueue >= 0 && int64(q) >= t.maxQueue {
			return false
		}
		if t.state.CompareAndSwap(s, s+oneQueued) {
			w.state = queued
			t.q.push(w)
			return true
		}
	}
}

func throttleWait(as *engine.Steps, c *call) {
	ext := as.External()
	t := c.t
	t.mu.Lock()
	if c.tw.state == holding {
		t.mu.Unlock()
		as.Pass()
		return
	}
	c.tw.ext = ext
	t.mu.Unlock()
}

// throttleCancel takes a canceled flow out of the queue. An entry already
// granted stays counted: the period's budget was spent on it.
func throttleCancel(as *engine.Steps) {
	c := engine.Bound[call](as)
	t := c.t
	t.mu.Lock()
	if c.tw.state == queued {
		t.q.remove(&c.tw)
		t.state.Add(^uint64(oneQueued - 1))
	}
	c.tw.state = idle
	t.mu.Unlock()
}

// Stats returns a snapshot of t: entries this period and flows waiting.
func (t *Throttle) Stats() Stats {
	n, q := unpack(t.state.Load())
	return Stats{Holders: int(n), Queued: int(q)}
}
