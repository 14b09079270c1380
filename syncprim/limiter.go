package syncprim

import (
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// LimiterOptions configures a Limiter (spec 2.5). Zero fields take the
// spec's defaults: Concurrent 1, Rate 1, Period 1s, MaxQueue 0 and Burst 0
// (no waiting: a flow that cannot enter at once is rejected).
//
// Queue lengths (MaxQueue, Burst): see the package doc, "Queue lengths".
type LimiterOptions struct {
	Concurrent int           // flows inside at once
	MaxQueue   int           // flows waiting for a concurrency slot
	Rate       int           // entries per Period
	Period     time.Duration // the rate's period
	Burst      int           // flows waiting for the rate
}

// Limiter bounds both concurrency and rate (spec 1.11.7, 2.5): a Mutex of
// Concurrent slots around a Throttle of Rate entries per Period.
type Limiter struct {
	m *Mutex
	t *Throttle
	// lock is the uncontended path: a free slot and rate budget left, with
	// nobody queued on either, let the flow in as one step with no
	// per-call state, as a Mutex's or Throttle's own.
	lock engine.Lock[Limiter]
}

// NewLimiter returns a Limiter whose rate timer runs on r, which must not
// be nil (a nil r panics). A Limiter always limits the rate (Rate 0 is the
// spec's 1 per Period): for concurrency alone, use a Mutex of Concurrent
// slots, NewMutex(n, maxQueue).
//
// Queue lengths (MaxQueue, Burst): see the package doc, "Queue lengths".
func NewLimiter(r *reactor.Reactor, o LimiterOptions) *Limiter {
	if r == nil {
		panic("syncprim: NewLimiter with a nil reactor: the rate timer runs on it (any reactor of the process will do)")
	}
	if o.Concurrent <= 0 {
		o.Concurrent = 1
	}
	if o.Rate <= 0 {
		o.Rate = 1
	}
	l := &Limiter{
		m: newMutex(o.Concurrent, limiterQueue(o.MaxQueue)),
		t: newThrottle(r, o.Rate, o.Period, limiterQueue(o.Burst)),
	}
	l.lock.Init(l, limiterTry, limiterLeave, limiterSlow)
	return l
}

// Sync implements engine.Sync: f runs within both limits; a flow over
// either queue limit fails with DefenseRejected.
func (l *Limiter) Sync(as *engine.Steps, f engine.ExecFunc, onerror engine.ErrorFunc) {
	engine.AddLocked(as, &l.lock, f, onerror)
}

// TryEnterRun lets a run of up to n critical sections into l at once, with
// no step for each: sections one flow runs one after another on its own
// loop, each begun and ended within one step's callback, none waiting and
// none entering l again (a server answering the pipelined requests of one
// read, each request one section). It lets them in exactly as far as each,
// entering through Sync in its turn, would have entered at once: a
// concurrency slot free and nobody queued for one, and budget left this
// period with nobody queued for the rate. The run takes one concurrency
// slot, held until LeaveRun (its sections are never inside at the same
// time), and one of the period's rate entries for each section it lets in.
//
// It returns k, how many of the n sections may run now, in order: n when
// the period's budget allows them all, fewer when it runs out after k, and
// 0 when the first could not enter at once (l full, or flows queued on
// it), with nothing taken. The caller runs the sections from k on (all of
// them when k is 0) through Sync, each as itself, as it would have with no
// run: so each is let in, queued, or refused with DefenseRejected in its
// turn, as it would have been. When k > 0 the caller calls LeaveRun once,
// when the k sections are over, however they end (an error or panic in one
// included).
//
// While the run holds its slot, a flow that comes to l queues (or is
// refused) as it would behind any holder; with Concurrent 1 that includes
// the runner's own flow, which must not Sync on l before LeaveRun. No flow
// records the hold: Holds(l) is false in the run's sections.
func (l *Limiter) TryEnterRun(n int) int {
	if n <= 0 {
		return 0
	}
	if _, ok := l.m.tryEnter(0); !ok {
		return 0
	}
	k, prev, ok := l.t.tryEnterN(n, armedBit)
	if !ok {
		l.m.release()
		return 0
	}
	if prev&armedBit == 0 {
		l.t.arm()
	}
	return k
}

// LeaveRun ends a run that TryEnterRun let in (k > 0): its concurrency slot
// goes back, to the first flow queued for one if any (the run's rate
// entries are spent, as a section's are). Call it once per run, on any
// goroutine. A LeaveRun with nobody inside l (no run to end: a mistake)
// panics, naming it, rather than corrupt l's count.
func (l *Limiter) LeaveRun() {
	// release's fast path (nobody queued, not locked) with the mistake's
	// test on the same load: a server leaves once per read, and the call
	// and the second load were 14 instructions of the 40 that LeaveRun
	// and release took (profiles/notes/2026-11-28-srv4-round11.md).
	if s := l.m.state.Load(); s>>32 == 0 && uint32(s) != 0 && l.m.state.CompareAndSwap(s, s-1) {
		return
	}
	if n, _ := unpack(l.m.state.Load()); n == 0 {
		panic("syncprim: Limiter.LeaveRun with no run let in (TryEnterRun returned 0, or LeaveRun called twice)")
	}
	l.m.release()
}

// limiterTry is the Lock's Enter: a concurrency slot and rate budget, both
// free of waiters, let the flow in at once (arming the period timer if it
// was not running). A slot taken when the rate then says no is given back
// before the slow path queues: release hands it to a waiter if one came
// meanwhile, as any leave does. A reentrance (the flow holds the Limiter
// through either path) takes the slow path, which passes it through.
func limiterTry(as *engine.Steps, l *Limiter) bool {
	if l.m.max > 1 && as.Holding() && (as.Holds(l) || as.Holds(l.m)) {
		return false
	}
	if _, ok := l.m.tryEnter(0); !ok {
		return false
	}
	prev, ok := l.t.tryEnter(armedBit)
	if !ok {
		l.m.release()
		return false
	}
	if prev&armedBit == 0 {
		l.t.arm()
	}
	return true
}

// limiterLeave is the Lock's Leave: the concurrency slot goes back (the
// rate's entry is spent).
func limiterLeave(_ *engine.Steps, l *Limiter) { l.m.release() }

// limiterSlow is the Lock's slow path: the Mutex's then the Throttle's
// queue, with per-run state in the step's
// Stack memory. A flow inside a section entered at once (Holds(l)) passes
// the concurrency limit through, as a reentrance into the Mutex does.
func limiterSlow(as *engine.Steps, l *Limiter, f engine.ExecFunc) {
	sp := engine.Stack[spec](as)
	sp.m, sp.t, sp.f = l.m, l.t, f
	engine.Rebind(as, sp)
	if as.Holds(l) {
		as.ForwardArgs()
		addSection(as, sp, true)
		return
	}
	mutexEnter(as, sp, nil)
}

// rejectInfo is the ErrorInfo of a DefenseRejected: it names the object
// whose queue was full, the Limiter for either of a Limiter's parts.
func rejectInfo(sp *spec, rate bool) string {
	switch {
	case sp.m != nil && sp.t != nil && rate:
		return "limiter: rate queue (burst) is full"
	case sp.m != nil && sp.t != nil:
		return "limiter: concurrency queue is full"
	case rate:
		return "throttle queue is full"
	}
	return "mutex queue is full"
}

// Stats returns snapshots of the concurrency and rate parts.
func (l *Limiter) Stats() (concurrency, rate Stats) { return l.m.Stats(), l.t.Stats() }
