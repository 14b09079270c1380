// Package abi is FTN12's universal binary interface (spec v1.14, section
// 2.7) for the engine, through cgo: C, C++, Rust or any language with a C
// FFI adds steps to our flows, and Go steps run in flows other
// implementations drive.
//
// Three ways in:
//
//   - From Go, Binary(as) gives C code the FutoInAsyncSteps* of a step (or
//     root) and Wrap(p) adopts one: ours is a cast back to its
//     *engine.Steps; another implementation's becomes an *engine.Steps that
//     forwards every call through its vtable. ToValue reads a
//     FutoInBinaryValue as an engine.Value.
//   - From C, the library `make cabi` builds (build/libasyncsteps.a) has
//     the entry points of asyncsteps.h: reactors (manual or started),
//     roots, and the Mutex, Throttle and Limiter as FutoInSync*.
//   - abi/futoin.h is the spec's header, with static assertions on every
//     size and offset.
//
// # Cost
//
// A C step costs one cgo call. Each step C sees has an image in C memory
// (struct asx_bsi in bridge.h) whose first field is the FutoInAsyncSteps;
// while the engine runs a C callback, the entries that only record
// something (add, success, handle_error, setTimeout, setCancel,
// waitExternal, stack) are implemented in C and write into the image, and
// the engine reads the record when the callback returns. waitExternal,
// setTimeout and setCancel also call back into Go once, to arm the step's
// External at once: a worker thread given the pointer may finish the step
// before the callback returns. Only the entries that start or inspect more
// than the running step (parallel, loops, addSync, stateVariable, execute,
// the AsyncTool entries, ...) call back into Go otherwise. Only the
// callback's own thread records: another thread's calls go to Go. Images come from per-reactor pools: a C step allocates nothing
// on the Go heap once warm.
//
// The C steps a C step adds cost less: when a callback has only recorded
// adds of C steps, they run back to back in C without returning to Go, the
// values one succeeds with handed to the next as they are (a chain). The
// chain hands the engine the step it stands at as soon as a step does
// anything but succeed with plain values (no cleanup, not made in Go) or
// return (an error, a wait, a timeout, sub-steps, stack memory, a call of
// an entry that goes to Go, Wrap of its pointer), and when the flow's turn
// budget is spent: flows see what they would see step by step. A C step
// added from Go (AddC, or through the vtable from Go code) runs alone.
//
// # Values
//
// Values cross without their payload being copied: a FutoInBinaryValue and
// an engine.Value are both four words. Go's Int, Uint, Float, Bool, Str,
// Bytes and Obj reach C as INT64, UINT64, DOUBLE, BOOL, STRING, UINT8 array
// and CUSTOM_OBJECT (custom_data a cgo.Handle). The payload of a Go string
// or byte slice is pinned while the C callback that receives it runs: C
// must copy what it keeps longer. C's values reach Go keeping their type,
// union, custom_data and length: every integer width as Int or Uint, FLOAT
// and DOUBLE as Float, BOOL as Bool, STRING as Str and byte arrays as
// Bytes, sharing C's memory; the other types (UTF-16 and UTF-32 strings,
// other arrays, other implementations' objects) as engine.KindBinary,
// whose descriptor Value.BinaryParts gives back. A C value whose type has
// a cleanup belongs to the flow it is given to: the engine runs the cleanup
// exactly once, when the value leaves the flow's arguments (replaced by the
// next success, dropped when a step adds sub-steps, when the flow starts
// again or when its root is freed). A step that passes on the values it
// received does not clean them. A C step may also take a value over:
// when its callback returns with the value's slot emptied (type NULL, as
// futoin_reset_binval leaves it after running the cleanup itself), the
// engine runs no cleanup for it again.
//
// Values given to another implementation's flow (through Wrap) must outlive
// Go's references, so there a Go string or byte slice crosses as a
// malloc'ed copy whose type frees it, and a Go object as a handle whose
// type deletes it.
//
// # Threads
//
// Every callback runs on its flow's reactor loop: on the thread that holds
// the loop's word, which is not always the loop's own (engine's CONTRACT,
// "Where a flow runs"). In particular execute, called from a thread outside
// the loops while the loop is parked, runs the loop's turn on the calling
// thread before it returns: the root's first steps (and whatever else that
// loop had ready) may run inside the execute call, on the caller's thread,
// with is_same_thread true. So does success or handle_error of a waiting
// step called from such a thread: the result is applied and the flows it
// made ready run once on the calling thread (the next steps, up to the
// flow's next wait or its end) before the call returns. So a thread must
// not hold, across execute, success or handle_error, a lock that a step
// takes, and must not count on the call returning before the next step
// runs; a reactor whose callbacks need the loop's own thread is made with
// reactor.Options.OwnThread (from C: asyncsteps_reactor_start_own_thread).
// From any thread: the
// sched_* entries, is_same_thread, execute and cancel of a root, and
// success or handle_error of a step that waits (waitExternal, setTimeout,
// setCancel) once its callback has returned. A root is built (add, ...)
// by the thread that holds it, before execute.
//
// # Misuse
//
// C has no exceptions: handle_error, breakLoop and continueLoop record the
// outcome and return, and the callback must return. An entry that would
// change the step called after them in the same callback (add, parallel,
// success, handle_error, setTimeout, setCancel, waitExternal, loop,
// repeat, breakLoop, continueLoop, addSync: code after a throw never
// runs), success twice, add after success, a NULL callback, or a
// FutoInAsyncSteps* kept past its step fails the step that is running with
// InternalError (State().ErrorInfo says which), never the process and
// never another flow. The entries that only read or reach past the step
// stay allowed after handle_error, as a C++ catch block or destructor may
// call them after a throw: stateVariable ("error_info" then already gives
// the info just raised), stack, rootId, isValid, newInstance, free,
// execute, cancel, the sched_* entries and is_same_thread.
//
// isValid is Valid, and for a root also false while its flow runs
// (Executing): the spec's "valid state for usage", since a running root
// takes no steps; the C++ reference answers the same. An image is only ever reused as an
// image, so a pointer kept too long always meets an image, never foreign
// memory; and a released image is reused only after 256 more were released
// on its reactor, so until then a kept pointer meets a stale image and the
// misuse is reported. (Past that window the pointer names a newer step: C
// code must not keep a FutoInAsyncSteps* past its step.) A late success
// for a step that waited goes through a generation-checked External and
// never finishes a newer step while the image is in quarantine.
//
// Go code that a C callback calls (a cgo export of yours) may use
// Wrap(bsi) to add steps or read values, but must not raise through the C
// frames above it: Error, Break and Continue unwind with a panic, which C
// code cannot see or clean up after. Report an error from there with the
// vtable (handle_error, breakLoop, continueLoop) and return.
//
// # The C++ FutoIn API
//
// The C++ reference's BinarySteps wrapper (wrap() in futoin/core-cpp-ri-
// asyncsteps, src/binaryapi.cpp) runs C++ IAsyncSteps code in our flows:
// values moved in and out with placeholders in the unused slots, loops on
// a parallel accessor (each a branch), error_info read back after
// errorNoThrow, isValid on a root, stack after an error all behave as it
// expects (abi/ctests/wrapper_ctest.c does its calls in C). Placeholders
// are values like any other here: a Go step after a C++ one sees four
// arguments. Two things of the wrapper we cannot meet: it reads a
// FutoInHandle's second word (data2) as a pointer to its own C++
// IAsyncTool, so Handle::cancel() or a Handle's bool on a handle of ours
// crashes (our handle words are opaque, as the spec says: pass the handle
// back through sched_cancel and sched_is_valid instead); and a C++
// exception thrown in a step aborts the process (its catch_trace is fatal
// unless the engine is its own). Nor can its state().last_exception():
// it dereferences what stateVariable gives for "last_exception", a name
// we do not keep (NULL).
//
// # Sync objects
//
// Our FutoInSync objects (asyncsteps_mutex_new, ...) serve our addSync as
// engine.Sync sections, and serve any engine through the lock and unlock
// slots of spec 2.7.3: lock makes the calling step wait while a proxy root
// of ours enters the object on its flow's behalf, and resumes it (through
// its engine's sched_immediate) once in, or fails it with the object's
// code (DefenseRejected); unlock, from the same flow, ends the proxy's
// section. Another implementation's FutoInSync works with our addSync
// through its lock and unlock. Go's Sync inside another implementation's
// flow (through Wrap) becomes that engine's addSync with the object as a
// FutoInSync of ours.
package abi
