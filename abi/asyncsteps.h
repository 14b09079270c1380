/*
 * asyncsteps.h: the C entry points of the asyncsteps library
 * (build/libasyncsteps.a, built by `make cabi`). Link a program with
 *
 *     gcc prog.c -Iabi build/libasyncsteps.a -lpthread
 *
 * Everything a step does goes through the FTN12 vtable of futoin.h
 * (bsi->api->add, ->success, ...); this header only adds what the
 * specification leaves to the implementation: event loops, roots and the
 * synchronization objects of spec sections 2.3 to 2.5.
 *
 * Threads: a reactor runs the flows on it one thread at a time, its loop. A
 * manual reactor's loop is whichever thread calls run_until_idle,
 * iterate or advance; a started reactor has a thread of its own. Step callbacks run on
 * the loop. The sched_* vtable entries, execute, cancel and a step's
 * success/handle_error while it waits (after waitExternal) may be called
 * from any thread. While a started reactor's thread is idle, execute,
 * success and handle_error called from another thread run the flow's next
 * steps on the calling thread, as the loop, before they return
 * (is_same_thread is true inside them): hold no lock across those calls
 * that a step takes, or start the reactor with
 * asyncsteps_reactor_start_own_thread.
 *
 * C has no exceptions: handle_error, breakLoop and continueLoop record the
 * outcome and return, and the callback must return then. After them, in
 * the same callback, an entry that would change the step (add, parallel,
 * success, handle_error, setTimeout, setCancel, waitExternal, loop,
 * repeat, breakLoop, continueLoop, addSync) fails that flow with
 * InternalError, as code after a throw never runs; the entries that only
 * read or reach past the step stay allowed, as a C++ catch block or
 * destructor may call them after a throw: stateVariable (error_info then
 * already gives the info just passed to handle_error), stack, rootId,
 * isValid, newInstance, free, execute, cancel, the sched_* entries and
 * is_same_thread. A bsi kept past its step, or a NULL callback, fails the
 * flow with InternalError too; a misuse never crashes the process.
 *
 * isValid is Go's Valid (0 for a step that has ended, or a root freed),
 * and for a root also 0 while its flow runs (Go: Executing): the spec's
 * "valid state for usage", since a running root takes no steps. The C++
 * reference answers the same.
 *
 * Values: a value whose slot the execute callback empties (type NULL
 * after it returns, as futoin_reset_binval leaves it after running the
 * type's cleanup) is taken over by the callback; the engine runs no
 * cleanup for it again. Values not taken over are cleaned by the engine
 * once, when they leave the flow's arguments.
 */
#ifndef ASYNCSTEPS_H
#define ASYNCSTEPS_H

#include "futoin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An event loop: the AsyncTool of spec 2.6. */
typedef struct AsyncStepsReactor AsyncStepsReactor;

/* A manual reactor: no thread of its own, and a virtual clock that only
   asyncsteps_reactor_advance moves. The calling program drives it.
   Never NULL. */
AsyncStepsReactor* asyncsteps_reactor_manual(void);

/* A started reactor: its loop runs on a thread of its own, pinned to CPU
   cpu when cpu >= 0. NULL if it cannot start (cpu out of range, no
   descriptors left). */
AsyncStepsReactor* asyncsteps_reactor_start(int cpu);

/* asyncsteps_reactor_start, with every step callback kept on the loop's
   own thread: execute, success and handle_error from another thread then
   always hand the work to the loop (a wake-up each) instead of running
   the flow's next steps on the calling thread while the loop is idle.
   For steps that need the loop's thread itself (thread-local state of a
   C library, the pinned CPU). */
AsyncStepsReactor* asyncsteps_reactor_start_own_thread(int cpu);

/* Manual reactors only: run what is ready (steps, immediate callbacks,
   completions from other threads) until nothing is. */
void asyncsteps_reactor_run_until_idle(AsyncStepsReactor* r);

/* Manual reactors only: one round of the work that is ready now (what
   run_until_idle repeats), so that a program can drive an endless flow a
   step at a time and do its own work between rounds. Returns 1 when work
   is still ready (call again), 0 when none is; timers not yet due on the
   virtual clock are not ready work (asyncsteps_reactor_advance fires
   them). */
int asyncsteps_reactor_iterate(AsyncStepsReactor* r);

/* Manual reactors only: move the virtual clock forward by ms, firing the
   timers (deferred callbacks, step timeouts) that fall due in order, and
   running the work they make ready. */
void asyncsteps_reactor_advance(AsyncStepsReactor* r, uint32_t ms);

/* Closes r: flows still running end Canceled (their cancel handlers run),
   a started reactor's thread stops. r must not be used after. */
void asyncsteps_reactor_free(AsyncStepsReactor* r);

/* A new root AsyncSteps on r: add steps with root->api->add (and the other
   entries), then start it with root->api->execute(root, data, on_error).
   After its flow has ended it may be given steps and executed again.
   Called on the loop outside any step with no flow ready ahead, execute
   runs the flow's first turn before it returns, as Go's Execute does
   (CONTRACT.md, "Where a flow runs"): its steps, and on_error if it ends
   with an error there, may have run by then. Free it with
   root->api->free(root) once its flow has ended; freeing a running root
   cancels it first. Never NULL for a live r. */
FutoInAsyncSteps* asyncsteps_new(AsyncStepsReactor* r);

/* The synchronization objects of spec 2.3-2.5, for api->addSync. They may
   be shared by flows on different reactors; a waiting flow resumes on its
   own reactor. A flow that finds the queue full fails with
   DefenseRejected. Their lock/unlock slots (spec 2.7.3) serve other
   engines' addSync too: lock makes the calling step wait until the flow is
   let in (resumed through that engine's sched_immediate); unlock, from the
   same flow (rootId), lets the next one in. */

/* max_queue of asyncsteps_mutex_new and asyncsteps_throttle_new: no queue
   (the spec's max_queue=0: a flow that cannot enter at once fails with
   DefenseRejected), their own 0 being the spec's null (unlimited). The Go
   API's syncprim.NoQueue. */
#define ASYNCSTEPS_NO_QUEUE UINT32_MAX

/* Mutex: at most max flows inside at once (max 0 is taken as 1);
   max_queue 0: unlimited queue; ASYNCSTEPS_NO_QUEUE: no queue; n: at most
   n waiting. */
FutoInSync* asyncsteps_mutex_new(uint32_t max, uint32_t max_queue);

/* Throttle: at most max entries per period_ms (0 is taken as 1000) on r's
   clock; max_queue as asyncsteps_mutex_new's. */
FutoInSync* asyncsteps_throttle_new(AsyncStepsReactor* r, uint32_t max, uint32_t period_ms, uint32_t max_queue);

/* Limiter, spec 2.5: concurrent flows inside, max_queue waiting for them,
   rate entries per period_ms, burst waiting for the rate. Zero takes the
   spec's defaults: concurrent 1, max_queue 0 (none may wait), rate 1,
   period_ms 1000, burst 0 (none may wait). */
FutoInSync* asyncsteps_limiter_new(AsyncStepsReactor* r, uint32_t concurrent, uint32_t max_queue,
                                   uint32_t rate, uint32_t period_ms, uint32_t burst);

/* Frees a sync object made above, once no flow uses it. */
void asyncsteps_sync_free(FutoInSync* s);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ASYNCSTEPS_H */
