// Package engine is the FutoIn FTN12 AsyncSteps state machine (spec v1.14,
// sections 1 and 2): a program split into non-blocking steps that run on a
// reactor, with sub-steps, parallel steps, error handlers that act like
// try/catch, timeouts and cancel handlers, loops with labelled break and
// continue, and state.
//
// # Threads
//
// Every flow belongs to one reactor and runs on its loop. Cancel,
// External's methods, Execute, Promise, New and NewInstance are safe from
// any goroutine: they post work to the loop, or, while a real loop is
// parked, the caller takes its word and runs the loop's turn itself
// (Execute, Promise) or the flows an External's result made ready
// (External's methods), so the flow's steps may run on the caller before
// the call returns (CONTRACT.md, "Where a flow runs"; a reactor made with
// reactor.Options.OwnThread never lends its loop). Building a root that
// has not been executed (Add and friends) is for the goroutine that holds
// it. Everything else runs on the loop, inside callbacks. To start many flows
// from one goroutine and wait for them all, a Batch posts once per
// reactor and wakes the waiter once, where a Promise per flow costs a post
// and a wake-up check each (and a share of a slab of 14 Promises).
//
// # Lifetimes
//
// A *Steps accessor lives as long as its step: after the step completes,
// fails or is canceled, Valid reports false and calls on it are misuses,
// until its memory is reused for another step. Keep External, never the
// accessor, to finish a step later. Stack memory lives exactly as long as
// its step. Args returned by Args are valid until the step ends. A root is
// valid until Release; it can be executed again after its flow ends. A
// released root is the pool's: the free lists are FIFO and hold 8 released
// roots back, and until New hands its memory out again every call on a kept
// pointer does nothing (Valid reports false); after that the pointer is the
// next owner's root, and its calls (a Cancel) act on that owner's flow. So
// a goroutine that may act on a root after its owner released it keeps a
// Ref (generation checked, like External), never the *Steps. The
// asyncsteps_debug build tag finds kept pointers: released roots are never
// reused, and any method called on one panics with its name ("engine:
// Cancel on a released root"); Ref's methods stay quiet. The default
// build's code does not change (the check is a false constant there).
//
// A Promise is not pooled: it, and the *Args its Wait returns, are the
// holder's for good, after the root's Release too, and never show another
// flow's result. Promises are carved from slabs of 14 per reactor (one
// allocation per 14 flows), so a Promise kept long keeps its slab's 2 KB,
// and the values of the slab's other results, reachable; copy the values
// out of a result kept for long. The reactor itself lets go of its current
// slab at the trim tick a Promise's end arms (within about a second),
// so the results of dropped Promises, values or *Error, do not stay
// reachable from an idle reactor.
//
// # The life of a root
//
// A root from New or NewInstance goes through four states:
//
//   - Built: not executing. The goroutine that holds it may Add, Parallel,
//     Sync, Loop and friends, Set and Get State, CopyFrom, Clone, then
//     Execute or Promise (which executes). Cancel does nothing.
//   - Running: from Execute until the flow ends. Only Cancel, Ref,
//     Executing, Release (cancels, then releases) and ReleaseAtEnd (lets
//     it finish, then releases) may be called on the root; the flow's own
//     steps use their accessors. Any other call on the root is a misuse:
//     from a step of another flow it fails that step with InternalError;
//     off the loop there is no step to fail, so Add, the other building
//     calls and Execute do nothing, and Promise returns a Promise whose
//     Wait reports InternalError. Executing tells the states apart.
//   - Ended: the flow succeeded, failed or was canceled (a Promise has
//     its result). The root is built again: it may take new steps and be
//     executed again, allocating nothing, or be released.
//   - Released: back in the reactor's pool, through Release or
//     ReleaseAtEnd. Every call on it does nothing (a misuse) until New
//     hands its memory to another owner; then it is that owner's root.
//
// A server's natural pattern, fire and forget, is New, Add, Execute,
// ReleaseAtEnd: the flow runs to its end and its root is recycled by
// itself. Without Release or ReleaseAtEnd a root is never recycled
// (Stats.RootsLive counts it) - keep it to execute it again, as stepsd
// keeps one per pooled request.
//
// # Errors and misuse
//
// Error raises a FutoIn error code: the engine unwinds to the error
// handlers, innermost first (spec 1.2). Any violation of the API (spec 2.1:
// Success after sub-steps, Success twice, a stale accessor, more than four
// values, a nil function, Break outside a loop, ...) fails the running step
// with InternalError and an explanatory State().ErrorInfo; a panic in a
// callback does the same with a *PanicError in LastException. Neither
// crashes the process nor touches another flow.
//
// # Names, contexts and metrics
//
// A root may carry a name (SetName: the kind of flow, such as a request's
// command). While its steps run, the loop's goroutine carries the pprof
// label flow=<name>, so a CPU profile splits by kind of flow
// (go tool pprof -tags, -tagfocus=flow=GET): by default only while a CPU
// profile is being recorded, when a label is read (SetFlowLabels; a
// server's flows would switch labels at nearly every flow otherwise);
// under runtime/trace each run
// is a trace task named after the flow, with a region per step. A root may
// be tied to a context.Context (SetContext): its cancellation cancels the
// flow, its deadline fails the flow with Timeout, AwaitFunc's functions
// get a context derived from it, and Promise.WaitContext waits under one.
// ReadMetrics takes a snapshot of a reactor's counters (steps, flows by
// result and by name, and the loop's own) from any goroutine; the counters
// cost the step path no atomic instruction.
//
// # Cost
//
// Steps run from pooled frames: once warm, a flow allocates nothing per step
// (Add, Success with scalar or string Values, SetTimeout, External,
// Stack, loops). Pools that grew in a burst give their idle items back
// within two seconds of it, and a burst's worth gets a GC and its pages
// returned to the OS soon after; SetForcedGC(false) leaves that GC to the
// runtime.
//
// # Writing a Sync object
//
// Steps.Sync(obj, f, onerror) calls obj.Sync(as, f, onerror) at once: the
// object adds the steps that wait, enter and leave (syncprim's Mutex,
// Throttle and Limiter are written this way). The engine gives such
// objects a small kit, so that a critical section costs no closure and no
// allocation per call:
//
//   - Lock and AddLocked make the uncontended section one step: the
//     object's Lock (set up once with Init) tries to let the flow in when
//     the step starts; if it does, f runs as that step, and the Lock's
//     leave func runs when the step ends, however it ends, whatever f set
//     with SetCancel or SetFinally; if not, the object's slow func runs
//     instead, as an AddWith step bound to the object, and queues with
//     the rest of the kit. No per-call state, no extra frame, no enter or
//     leave step: syncprim's Mutex uses it.
//   - Lock.Wait, called by the slow func, makes its step wait for the
//     External it returns; when the object passes it, the step runs again
//     as the entered section (f as its callback, leave when it ends), so a
//     queued flow too costs no extra step. WaitBound is Lock.Wait with
//     the step rebound to a waiter the object owns and its cancel handler
//     set, in one call, so the wait needs no Stack record: syncprim's
//     Mutex queues so.
//   - AddWith(as, f, v) adds a step that calls f(as, v): f a top-level
//     function, v the object's per-call state. Bound[T](as) finds v again
//     from the step's cancel or error handler (T is not checked: it must be
//     AddWith's); Rebind replaces it for the running step (per-run state,
//     while the value given to AddWith stays shared by copies of the step).
//   - Stack[T](as) is zeroed memory that lives as long as as's step: where
//     a Sync object keeps the per-run state it Rebinds (syncprim's
//     Throttle and Limiter do, and the Mutex for a reentrance).
//   - Hold, Holds and Unhold record which objects a flow is inside, for
//     reentrance: a nested Sync on an object the flow holds passes through.
//     Parallel branches are flows of their own and inherit nothing.
//   - ForwardArgs makes the step's first sub-step receive the values the
//     step received, so a section can stand between two steps without
//     changing what flows from one to the other; Pass ends a step keeping
//     its values (a wait step whose External.Pass lets it in).
//   - SetFinally(h) runs h once when the step ends, however it ends:
//     success (after its sub-steps), error (after its handler) or cancel.
//     An object leaves there, with no step of its own after the section.
//
// Example_writingASyncObject is a complete one: a gate that lets a number
// of flows in through a Lock and rejects the rest on its slow path.
package engine
