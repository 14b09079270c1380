package syncprim

import (
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Throttle lets at most max flows into its section per period (spec 2.4).
// A period starts with the first entry after an idle one; the others wait in
// a FIFO queue for the next period, at most maxQueue of them (past that:
// DefenseRejected). Its period timer runs on r's wheel: no goroutine.
type Throttle struct {
	r      *reactor.Reactor
	period time.Duration
	gate   // count = entries this period; armedBit: the period timer runs

	grants []engine.External // the owner loop's scratch for waking waiters
	// lock is the uncontended path: an entry that finds budget left this
	// period and nobody queued is one step, with no per-call state.
	lock engine.Lock[Throttle]
}

// NewThrottle returns a Throttle of max entries (at least 1) per period
// (1s if <= 0), with a queue of at most maxQueue flows: 0 (or Unlimited)
// for no limit, NoQueue for none. Its timer runs on r, which must not be
// nil (a nil r panics).
//
// Queue lengths (maxQueue): see the package doc, "Queue lengths".
func NewThrottle(r *reactor.Reactor, max int, period time.Duration, maxQueue int) *Throttle {
	if r == nil {
		// Checked here, not when the first period timer is armed,
		// where it failed some flow with a nil dereference.
		panic("syncprim: NewThrottle with a nil reactor: the period timer runs on it (any reactor of the process will do)")
	}
	return newThrottle(r, max, period, queueLimit(maxQueue))
}

func newThrottle(r *reactor.Reactor, max int, period time.Duration, maxQueue int) *Throttle {
	if max < 1 {
		max = 1
	}
	if period <= 0 {
		period = time.Second
	}
	t := &Throttle{r: r, period: period, gate: gate{max: uint32(max), maxQueue: int64(maxQueue)}}
	t.lock.Init(t, throttleTry, throttleLeave, throttleSlow)
	return t
}

// Sync implements engine.Sync: f runs once the flow is let in; see the package doc.
func (t *Throttle) Sync(as *engine.Steps, f engine.ExecFunc, onerror engine.ErrorFunc) {
	engine.AddLocked(as, &t.lock, f, onerror)
}

// throttleTry is the Lock's Enter: budget left this period and nobody
// queued let the flow in at once (arming the period timer if it was not
// running), and the section runs as the Sync step itself.
func throttleTry(_ *engine.Steps, t *Throttle) bool {
	prev, ok := t.tryEnter(armedBit)
	if ok && prev&armedBit == 0 {
		t.arm()
	}
	return ok
}

// throttleLeave is the Lock's Leave: an entry spends the period's budget,
// so there is nothing to give back.
func throttleLeave(*engine.Steps, *Throttle) {}

// throttleSlow is the Lock's slow path: the step queues (or is rejected)
// and runs f as its sub-step, with per-run state in its Stack memory.
func throttleSlow(as *engine.Steps, t *Throttle, f engine.ExecFunc) {
	sp := engine.Stack[spec](as)
	sp.t, sp.f = t, f
	engine.Rebind(as, sp)
	throttleEnter(as, sp)
}

// arm starts the period timer on the owner reactor.
func (t *Throttle) arm() {
	reactor.PostTo(t.r, throttleArm, t, 0)
}

func throttleArm(t *Throttle, _ uint64) {
	reactor.AfterTo(t.r, t.period, throttleTick, t, 0)
}

// throttleTick ends a period on the owner loop: the next waiters, up to max,
// enter the new one.
func throttleTick(t *Throttle, _ uint64) {
	s := t.lockWord()
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
	_, q := unpack(s)
	next := n | (uint64(q)-n)<<32
	if n > 0 {
		next |= armedBit
	}
	t.unlockWord(next)
	if n > 0 {
		reactor.AfterTo(t.r, t.period, throttleTick, t, 0)
	}
	for i := range g {
		resume(g[i])
		g[i] = engine.External{}
	}
	t.grants = g[:0]
}

func throttleEnter(as *engine.Steps, sp *spec) {
	t := sp.t
	as.ForwardArgs()
	if prev, ok := t.tryEnter(armedBit); ok {
		if prev&armedBit == 0 {
			t.arm()
		}
		as.Add(sp.f)
		return
	}
	c := queueCall(as, sp)
	prev, wait, ok := t.enqueue(&c.tw, armedBit)
	if !ok {
		as.Error(engine.DefenseRejected, rejectInfo(sp, true))
	}
	if !wait {
		if prev&armedBit == 0 {
			t.arm()
		}
		as.Add(c.f)
		return
	}
	as.SetCancel(throttleCancel)
	engine.AddWith(as, throttleWait, c)
	as.Add(c.f)
}

func throttleWait(as *engine.Steps, c *call) { c.t.wait(as, &c.tw) }

// throttleCancel takes a canceled flow out of the queue. An entry already
// granted stays counted: the period's budget was spent on it.
func throttleCancel(as *engine.Steps) {
	c := engine.Bound[call](as)
	c.t.unqueue(&c.tw)
}
