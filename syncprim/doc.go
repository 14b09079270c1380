// Package syncprim provides FTN12's synchronization primitives (spec 1.11,
// 2.3-2.5): Mutex, Throttle and Limiter. Each implements engine.Sync, so
// as.Sync(obj, f, onerror) runs f inside the object's critical section.
//
// # What a Sync adds
//
// obj.Sync(as, f, onerror) adds one step W to as, with onerror as W's error
// handler. When W runs it enters the section, or queues and waits; then f
// runs as W's sub-step, receiving the values W received (spec 1.11.3); the
// values f succeeds with flow out of W unchanged. A Mutex is left when f's
// steps are done, when an error unwinds through W, or when the flow is
// canceled: W's finally handler (engine.SetFinally) leaves it. onerror runs
// inside the section (spec 2.1: sync runs its callbacks in the critical
// section): the object is left after onerror returns, or, when onerror
// adds steps, after those steps end. A Throttle has nothing to give back:
// an entry spends the period's budget. A full queue fails W with
// DefenseRejected before it enters, so onerror then runs outside.
//
// A Mutex, Throttle or Limiter that W enters at once (a free slot, budget
// left, or both for a Limiter; nobody queued) makes W the section itself
// (engine.AddLocked): f runs as W, with W's values, and a Mutex's or
// Limiter's slot is given back when W ends, however it ends, whatever f
// set with SetCancel or SetFinally. What the flow observes is the same as above,
// one step shorter: no per-call state and no extra step.
//
// A Mutex that W must queue for makes W the section too, once it is let
// in (engine.Lock.Wait): W waits as itself, the release that hands it the
// slot passes W's External, and W runs again as the section, f as its
// callback, leaving when it ends as above. A waiter costs a queue node
// the Mutex owns and reuses (engine.WaitBound), no per-call state and no
// extra step. Throttle and Limiter waiters still wait in a step of their
// own, before f.
//
// # Queue lengths
//
// Each object takes the longest queue of flows that may wait to enter;
// past it a newcomer fails with DefenseRejected (Stats.Rejected counts
// it). The spec gives Mutex and Throttle max_queue=null (unlimited) by
// default and the Limiter's queues 0 (nobody waits), and the Go API keeps
// those defaults in its zero values:
//
//   - NewMutex and NewThrottle: 0 means unlimited (the spec's null).
//   - LimiterOptions.MaxQueue and Burst: 0 means no queue (the spec's
//     default).
//   - Everywhere: Unlimited (or any negative but NoQueue) means no limit,
//     NoQueue means no queue (the spec's max_queue=0, which NewMutex and
//     NewThrottle cannot take as 0), and n > 0 means at most n waiting.
//
// The C entry points say the same with ASYNCSTEPS_NO_QUEUE (abi).
//
// # Threads and reactors
//
// Objects may be shared by flows on any number of reactors. The uncontended
// path is one CAS on a single state word: no lock, no allocation. Waiters
// queue under a mutex (contended path only) and are resumed through their
// step's External, which makes the flow ready on the waiter's own reactor:
// a flow always continues on its reactor, under that reactor's loop word
// (while that loop is parked, the releasing loop or goroutine may run the
// woken flow's turn itself instead of waking it; CONTRACT.md, "Where a
// flow runs"). Throttle and Limiter keep their
// period timers on the reactor given to their constructor, on its wheel.
//
// # Invariants
//
//   - A waiter is queued only while the object is full (Mutex: holders ==
//     max; Throttle: entries == max this period), and the fast path enters
//     only while nobody is queued: the queue is strictly first in, first
//     out, and nobody starves.
//   - A slot given to a waiter is handed over, never returned first: the
//     holder count does not drop and rise again, so no newcomer can barge.
//   - A waiter's record lives in the per-run state of the Sync step (its
//     Stack memory, so copies of the step never share it) and outlives the
//     wait; the releaser copies the waiter's External under
//     the lock and resumes it after unlocking, never touching the record
//     again, and a waiter canceled after it was handed a slot gives the slot
//     back: from its cancel handler if the cancel came before the hand-over
//     reached its loop, otherwise from the section's leave (a Mutex waiter
//     holds the slot from the moment its loop applies the hand-over).
//
// Reentrance (spec 1.11.4): a flow that holds a Mutex passes straight
// through a nested Sync on it. Parallel branches are flows of their own and
// inherit no lock. Deadlock detection (optional in the spec) is not
// implemented.
package syncprim
