// Package reactor is the event loop that runs engine flows: FTN12's
// AsyncTool (spec 2.6) plus the plumbing the engine needs.
//
// A Reactor is owned by one goroutine, "the loop". Work reaches it three ways:
//
//   - from the loop itself: Immediate and PostTo go to a plain FIFO, the
//     local queue, that only the loop touches (no atomic operation), and
//     Deferred becomes a timer in a hierarchical timer wheel; a local
//     task's Handle is its sequence number, a timer's is generation-checked;
//   - from any other goroutine: tasks go through a bounded lock-free MPSC
//     ring (see package ring); the Handle of such a task is its position in
//     the ring. A goroutine that finds a manual reactor idle (nobody drives
//     it, nothing posted is waiting) takes the loop's role for the moment
//     and queues locally instead: on a manual reactor the goroutine that
//     drives it is usually the only one;
//   - from the engine: the Run hook of the Ext it attaches with X.ExtOrInit,
//     which the loop calls on every iteration, so the engine can run its own
//     ready queue of flows without a task per step.
//
// # Contract between the loop and the engine
//
// The engine relies on exactly these guarantees:
//
//   - PostTo(r, cb, p, aux) (X.Post with an unsafe.Pointer arg) is safe from any goroutine, never allocates while
//     the ring has room, never drops work and never spins forever: when the
//     ring is full an ordinary goroutine waits (yielding, then sleeping with
//     backoff) until the loop frees a slot, which is backpressure rather
//     than loss; another reactor's loop (which must not block: two loops
//     waiting on each other would deadlock) and any caller of a manual
//     reactor queue the task in a locked overflow list instead, which the
//     loop drains keeping each producer's order. After Close it reports
//     false and does nothing.
//   - AfterTo (X.After), Stop and the Ext's Run are called on the loop only.
//   - Callbacks run on the loop, one at a time, never re-entrantly: a
//     callback that posts more work sees it run after it returns.
//   - Callbacks posted from one goroutine run in the order posted; timers
//     fire in deadline order, equal deadlines in the order scheduled. A
//     Deferred from another goroutine counts its deadline from its call
//     and joins that order when the loop takes it from the ring, which an
//     iteration does before it fires due timers, up to 2 x 1,024 posted
//     tasks. One behind a longer backlog of the ring (a flood, with the
//     loop late by more than its delay), or one whose Deferred call had
//     not returned when a later timer came due (its goroutine descheduled
//     inside the call), may fire after that timer.
//   - IsSameThread is true exactly when called on the loop.
//
// # Who the loop is: the loop word
//
// "The loop" is whoever holds the reactor's loop word (loopG): one
// goroutine at a time, and IsSameThread and IsLoopGoroutine compare the
// caller's goroutine identity with it, so they are truthful wherever a
// callback runs. A real loop holds its word while it runs, and lends it
// while it is parked in epoll_wait after a turn that found nothing to do
// (the word is then parkedG, no goroutine's identity). A goroutine that is
// about to wait for this reactor's work (engine's Promise.Wait) may then
// take it with a CompareAndSwap and run one turn itself (Assist): the
// posted work runs without a wake-up of the loop's thread, and the waiter,
// which would otherwise be woken by the loop in its turn, does not sleep
// at all. A goroutine outside the loops that executes a flow (engine's
// Execute, through X.RunParked when nothing is queued, else X.PostRun;
// Promise, through X.RunParkedP, which returns the Promise made there)
// does the same: without a wake-up, it runs
// the turn that runs its start task (directly, first, when nothing else is
// queued; from the ring, behind what is queued, otherwise; a direct task
// that only readied flows is followed by the flows alone, with no look at
// the clock: timers that come due meanwhile are the loop's, which its
// timerfd wakes), so a program
// that starts a flow and waits on its own channel (not a Promise) pays
// neither wake-up either; Execute then returns once that turn is over,
// which is why steps must not block on their executor. A goroutine outside
// the loops that finishes a step waiting on a parked loop (engine's
// External, through X.TakeParkedRun) does the same once it has made the
// flow ready under the word, bounded tighter: it runs the engine's ready
// flows once, and the flow goes on to its next wait or its end on that
// goroutine; what they leave wakes the loop. Safe because
// everything a turn touches is loop-owned and handed over by the word's
// acquire and release (the ring, the wheel, the local queue, the watches,
// the engine's queues); the assist re-arms the timerfd when the wheel's
// next deadline moved, so the parked loop wakes for a timer the assist
// made; a descriptor it watches is registered in the same epoll instance
// the loop waits on; work it leaves, and work posted meanwhile, wakes the
// loop as always (the sleeping flag is untouched). The loop takes its word
// back after epoll_wait returns, waiting out an assist (one turn at most),
// and drops that batch of events if an assist ran meanwhile: they may name
// a watch the assist removed, and, level-triggered, what is still ready is
// reported again. Only the OS thread differs: a reactor whose callbacks
// need the loop's own (pinned) thread is made with Options.OwnThread, and
// then nobody runs its turns in its place (no assist, no PostRun, no
// hand-off from another loop). Loops, and callbacks inside an assist,
// never assist (another reactor's turn would run inside their callback).
// The gnet Polling fallback never parks, so it is never assisted.
//
// Loops hand off to each other the same way: a loop whose callback posts
// to a parked reactor (a Mutex handed to a flow waiting there) does not
// write that reactor's eventfd; once its own callback has returned, it
// runs the parked reactor's turn itself under that reactor's word, and
// wakes it only if it is no longer parked by then (handoff_linux.go). The
// flows of a parked reactor may so run on another reactor's thread, one
// turn at a time, never inside that loop's own callbacks. When the
// hand-off only made flows ready there (a Mutex handed over under the
// parked loop's word) and the reactor has nothing else (no local task,
// no timer, nothing posted), that turn is the flows' run alone, as Go's
// runtime runs the goroutine it handed a lock to: the other sources have
// their own wake-ups, and what the flows leave (timers, watches, posts,
// more flows) is taken by the rest of a full turn.
//
// # A callback's hold on its loop: Loop
//
// Every Reactor method that may be called from anywhere first asks which
// goroutine is calling (the identity compared with the loop word): on the
// loop, Immediate and RunUntilIdle are a few loads and stores besides that
// question. A loop callback (or engine step) that schedules and drains
// often takes its reactor's Loop once (Reactor.Loop: true only on the
// loop) and calls Loop.Immediate and Loop.RunUntilIdle, which compare the
// loop word with the goroutine the Loop recorded instead of asking the
// runtime. They are the Reactor's methods in every other respect: the same
// local queue and order, Handles that Cancel and IsValid take, the zero
// Handle after Close, the whole iteration with panics to the panic
// handler. A Loop is valid only in the callback that made it (and drives
// nested in it), on its goroutine: the loop word held by its maker within
// the stretch of that hold that made it (loopGen: moved at the start and
// the end of each outermost iteration, and before the word is given up
// after any hold that may have run a callback). Used where that is not so
// (after the drive, in a later drive by the same goroutine, on a loop now
// parked or run by another goroutine, in a later iteration of a real
// loop, which keeps its word between iterations) it takes the Reactor's
// checked path; handed to another goroutine while its maker holds the
// word in that stretch it is a data race that only a -race (or
// asyncsteps_debug) build detects (the type's documentation).
//
// # Contract between the loop and the I/O layer (package netio)
//
//   - WatchTo(r, fd, interest, cb, p) (X.Watch untyped) registers fd with the loop's gnet
//     Poller; cb(arg, fd, ev) runs on the loop while fd is ready for what
//     SetInterest last asked (level-triggered). InterestHangup alone keeps
//     a descriptor that is not read in the poller for its peer's reset and
//     shutdown, each reported once (edge-triggered): a paused connection
//     still learns that its peer is gone. Unwatch before closing fd.
//     An event read in the same epoll_wait batch as the Unwatch of its fd
//     is dropped, even if a new watch took the number meanwhile.
//   - AtShutdownTo (X.AtShutdown) hooks run on the loop at Close, after accepted tasks and
//     due timers and before the engine cancels its flows: whoever owns
//     descriptors closes them there.
//
// # The real loop
//
// New's loop waits in epoll_wait on the Poller's epoll instance itself:
// one wait per batch of ready descriptors, one turn (tasks, due timers,
// engine flows) per batch, and it blocks only when the turn found nothing
// left (loop_linux.go says how the eventfd and timerfd are shared with
// producers). It finds that epoll instance in a private field of gnet's
// Poller; if a gnet release moves it, the loop falls back to gnet's
// Polling, about three times slower per round trip, and
// TestRunTakesTheFastPath fails (the asyncsteps_polling build tag runs the
// suites through that fallback on purpose). Run locks its goroutine to an OS thread, pinned to
// Options.CPU when Options.Pin is set (the zero Options pins nothing); an
// unpinned loop may run Unlocked.
//
// # Clock and timers
//
// Time advances in ticks of Options.Tick (1ms by default). A timer for delay
// d scheduled at time t fires at the first tick boundary at or after t+d:
// never early, at most one tick late.
//
// # Manual reactors
//
// NewManual returns a reactor with no thread and a virtual clock, for
// deterministic tests: "the loop" is whoever calls Iterate, RunUntilIdle or
// Advance, and the clock moves only in Advance.
//
// # Metrics
//
// The loop counts its iterations, the tasks and timers it ran, its
// wake-ups, the ring's high-water mark and its time in epoll_wait against
// its time running work, in plain loop-owned fields updated once per
// iteration or wait (LoopMetrics, loop only; engine.ReadMetrics takes the
// snapshot on the loop for any goroutine).
//
// # Where things are
//
// reactor.go: the Reactor and its clock; options.go: Options; asynctool.go:
// Immediate, Deferred, Cancel, IsValid; handle.go: Handle; local.go: the
// loop's local queue and its pending-work word; callback.go and typed.go:
// the allocation-free PostTo, AfterTo, Stop and their untyped forms (X);
// postlazy.go: a post without the wake-up; submit.go: the ring and
// overflow list other goroutines submit through; remote.go: the
// bookkeeping of their handles and timers; iterate.go: one iteration of
// the loop; manual.go: NewManual and its drive; takeidle.go: an idle
// manual reactor taken by the goroutine that finds it so; lifecycle.go:
// Close and shutdown hooks; ext.go: a layer's attachment, keyed by an
// ExtKey; internals.go: X, the entry points of the layers above;
// loop_linux.go: the real loop; spin.go: the adaptive spin before it
// sleeps; assist_linux.go: Assist and PostRun, a parked loop's turn run by
// the goroutine that waits or executes; borrow_linux.go: TakeParkedRun,
// an External finished off the loop; handoff_linux.go: a loop that runs a
// parked reactor's turn after posting to it; watch_linux.go and io.go:
// descriptor registration, Interest and Event; group.go: reactors per
// core; metrics.go: the loop's counters; trim.go: TrimTimers. The *_other.go
// files keep the same names off Linux, where only manual reactors exist.
//
// # Panics
//
// A panic in a callback is recovered: it is passed to Options.PanicHandler
// (by default it is printed to standard error) and the loop goes on.
package reactor
