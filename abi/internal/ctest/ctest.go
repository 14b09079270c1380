// Package ctest holds the C code of package abi's tests, since _test.go
// files cannot use cgo: C step functions written against futoin.h alone
// (steps.c), and a small foreign AsyncSteps implementation with its own
// vtable (foreign.c) to test abi.Wrap with an engine that is not ours.
//
// The C side records what happens in a log and counters in C globals; the
// tests that use this package run sequentially on one loop, so the
// functions here are not safe for concurrent use.
package ctest

/*
#cgo CFLAGS: -I${SRCDIR}/../.. -std=gnu11 -Wall
#include <stdlib.h>
#include "ctest.h"
*/
import "C"

import (
	"unsafe"

	"github.com/asyncsteps/asyncsteps/abi"
	"github.com/asyncsteps/asyncsteps/engine"
)

// Step selects one of the C step functions of steps.c (see ctest.h for
// what each does with data).
type Step int

// The C steps.
const (
	Inc                  Step = C.CT_INC
	Record               Step = C.CT_RECORD
	Mark                 Step = C.CT_MARK
	AddSubs              Step = C.CT_ADD_SUBS
	Fail                 Step = C.CT_FAIL
	Wait                 Step = C.CT_WAIT
	Timeout              Step = C.CT_TIMEOUT
	StackStep            Step = C.CT_STACK
	Repeat               Step = C.CT_REPEAT
	Loop                 Step = C.CT_LOOP
	ValueStep            Step = C.CT_VALUE
	Owned                Step = C.CT_OWNED
	Big4                 Step = C.CT_BIG4
	Parallel             Step = C.CT_PARALLEL
	StateStep            Step = C.CT_STATE
	GoAdd                Step = C.CT_GO_ADD
	SucceedArg           Step = C.CT_SUCCEED_ARG
	SpawnInc             Step = C.CT_SPAWN_INC
	SpawnBig4            Step = C.CT_SPAWN_BIG4
	MisuseSuccessTwice   Step = C.CT_MISUSE_SUCCESS_TWICE
	MisuseAddAfterSucces Step = C.CT_MISUSE_ADD_AFTER_SUCCESS
	MisuseAfterError     Step = C.CT_MISUSE_AFTER_ERROR
	MisuseNullAdd        Step = C.CT_MISUSE_NULL_ADD
	MisuseKeep           Step = C.CT_MISUSE_KEEP
	MisuseUseKept        Step = C.CT_MISUSE_USE_KEPT
	MisuseNullCancel     Step = C.CT_MISUSE_NULL_CANCEL
	AddList              Step = C.CT_ADD_LIST // adds the steps SetList set
	CallGo               Step = C.CT_GO_CALL  // logs data, calls GoCall, succeeds with INT32 data
)

// Item is one step of the list AddList adds.
type Item struct {
	Step Step
	Data int
	EH   Handler
}

// SetList sets the steps that AddList adds (at most 64).
func SetList(items ...Item) {
	if len(items) > 64 {
		panic("ctest: SetList takes at most 64 items")
	}
	for i, it := range items {
		C.ct_list_set(C.int(i), C.int(it.Step), C.intptr_t(it.Data), C.int(it.EH))
	}
	C.ct_list_n = C.int(len(items))
}

// GoCall, when set, is what a CallGo step calls from inside its C
// callback, with the step's FutoInAsyncSteps* and data.
var GoCall func(bsi unsafe.Pointer, data int)

//export ctGoCall
func ctGoCall(bsi *C.FutoInAsyncSteps, data C.int) {
	if GoCall != nil {
		GoCall(unsafe.Pointer(bsi), int(data))
	}
}

// Handler selects a C error handler.
type Handler int

// The C error handlers. Each logs its (negative) tag and keeps the code.
const (
	NoHandler Handler = C.CT_EH_NONE
	EHRecord  Handler = C.CT_EH_RECORD  // -1; the error goes on
	EHRecover Handler = C.CT_EH_RECOVER // -2; success(INT32 42)
	EHRethrow Handler = C.CT_EH_RETHROW // -3; handle_error("Rethrown")
	EHInfo    Handler = C.CT_EH_INFO    // -4; also keeps State's error_info (Info)
)

// Add adds the C step s (with data and the error handler eh) through as's
// FutoInAsyncSteps*: abi.Binary(as), which for an accessor made by
// abi.Wrap is the foreign engine's pointer.
func Add(as *engine.Steps, s Step, data int, eh Handler) {
	AddTo(abi.Binary(as), s, data, eh)
}

// The C functions behind Step and Handler, read once: what Go code that
// adds C steps holds.
var stepFns, handlerFns = func() (s [C.CT_STEP_COUNT]unsafe.Pointer, h [C.CT_EH_COUNT]unsafe.Pointer) {
	for i := range s {
		s[i] = C.ct_step_fn(C.int(i))
	}
	for i := range h {
		h[i] = C.ct_handler_fn(C.int(i))
	}
	return
}()

// AddGo adds the C step s as Go code holding C function pointers does:
// with abi.AddC, no crossing into C.
func AddGo(as *engine.Steps, s Step, data int, eh Handler) {
	d := uintptr(data) // an integer in a void*: by reinterpretation, as C does
	abi.AddC(as, stepFns[s], handlerFns[eh], *(*unsafe.Pointer)(unsafe.Pointer(&d)))
}

// AddTo adds the C step s through a FutoInAsyncSteps* directly.
func AddTo(bsi unsafe.Pointer, s Step, data int, eh Handler) {
	C.ct_add((*C.FutoInAsyncSteps)(bsi), C.int(s), C.intptr_t(data), C.int(eh))
}

// Reset clears the log and the counters.
func Reset() { C.ct_reset() }

// Push appends v to the log (Go steps log beside C steps).
func Push(v int) { C.ct_push(C.int(v)) }

// Log returns a copy of the log.
func Log() []int {
	n := int(C.ct_nlog)
	out := make([]int, n)
	for i := range out {
		out[i] = int(C.ct_log[i])
	}
	return out
}

// Code is the code the last C error handler got.
func Code() string { return C.GoString(&C.ct_code[0]) }

// Info is the error_info the last EHInfo handler read.
func Info() string { return C.GoString(&C.ct_info[0]) }

// Counters are the C side's counters.
type Counters struct {
	Cancels       int // cancel callbacks run
	StackCleanups int // stack() cleanups run
	StackBad      int // stack() memory that was not zeroed, or NULL
	ValueCleanups int // cleanups of owned values
	StateAllocs   int
	StateCleanups int
	BigOK, BigBad int // CT_BIG4 checks of the previous step's values
}

// Count returns the counters.
func Count() Counters {
	return Counters{
		Cancels: int(C.ct_cancels), StackCleanups: int(C.ct_stack_cleanups), StackBad: int(C.ct_stack_bad),
		ValueCleanups: int(C.ct_value_cleanups), StateAllocs: int(C.ct_state_allocs),
		StateCleanups: int(C.ct_state_cleanups), BigOK: int(C.ct_big_ok), BigBad: int(C.ct_big_bad),
	}
}

// SetLoopControl makes CT_REPEAT's body break at iteration brk and
// continue (skipping its log) at cont; -1 disables either.
func SetLoopControl(brk, cont int) {
	C.ct_break_at = C.int(brk)
	C.ct_continue_at = C.int(cont)
}

// IncSeen returns the two integers the last Inc step read.
func IncSeen() (int, int) { return int(C.ct_inc_seen[0]), int(C.ct_inc_seen[1]) }

// Waiting reports whether a Wait or Timeout step is waiting.
func Waiting() bool { return C.ct_waiting != nil }

// CompleteWaiting finishes the waiting step with success(INT32 v), from
// outside its callback.
func CompleteWaiting(v int32) { C.ct_complete_waiting(C.int32_t(v)) }

// CompleteWaitingOwned finishes the waiting step with two owned strings.
func CompleteWaitingOwned() { C.ct_complete_waiting_owned() }

// FailWaiting finishes the waiting step with handle_error(code).
func FailWaiting(code string) {
	cs := C.CString(code)
	C.ct_fail_waiting(cs)
	C.free(unsafe.Pointer(cs))
}

// WaitingPtr is the FutoInAsyncSteps* of the waiting step (nil if none).
func WaitingPtr() unsafe.Pointer { return unsafe.Pointer(C.ct_waiting) }

// CompleteOwnedOn calls success with two owned strings on bsi, from
// outside any callback.
func CompleteOwnedOn(bsi unsafe.Pointer) { C.ct_complete_owned_on((*C.FutoInAsyncSteps)(bsi)) }

// Kept is the pointer MisuseKeep kept.
func Kept() unsafe.Pointer { return unsafe.Pointer(C.ct_kept) }

// Value returns a C value (static memory) of type flags: an FTN_TYPE_*
// constant, or-ed with FTN_TYPE_ARRAY for arrays.
func Value(flags int) unsafe.Pointer { return unsafe.Pointer(C.ct_value(C.int(flags))) }

// ValueData returns the payload address of Value(flags) (custom_data for
// a custom object).
func ValueData(flags int) unsafe.Pointer { return unsafe.Pointer(C.ct_value_data(C.int(flags))) }

// OwnedValue fills the C value at v with an owned STRING copy of s: its
// cleanup frees it and counts in ValueCleanups.
func OwnedValue(v unsafe.Pointer, s string) {
	cs := C.CString(s)
	C.ct_owned_value((*C.FutoInBinaryValue)(v), cs)
	C.free(unsafe.Pointer(cs))
}

// NewCValue returns zeroed C memory for one FutoInBinaryValue; free it
// with Free.
func NewCValue() unsafe.Pointer { return C.calloc(1, C.size_t(unsafe.Sizeof(C.FutoInBinaryValue{}))) }

// Free frees C memory.
func Free(p unsafe.Pointer) { C.free(p) }

// BigA and BigB are the addresses of the two 1 KiB strings of Big4.
func BigA() unsafe.Pointer { return unsafe.Pointer(&C.ct_big_a[0]) }

// BigB: see BigA.
func BigB() unsafe.Pointer { return unsafe.Pointer(&C.ct_big_b[0]) }

// Type flags, for Value.
const (
	TypeCustomObject = C.FTN_TYPE_CUSTOM_OBJECT
	TypeString       = C.FTN_TYPE_STRING
	TypeString16     = C.FTN_TYPE_STRING16
	TypeString32     = C.FTN_TYPE_STRING32
	TypeBool         = C.FTN_TYPE_BOOL
	TypeInt8         = C.FTN_TYPE_INT8
	TypeInt16        = C.FTN_TYPE_INT16
	TypeInt32        = C.FTN_TYPE_INT32
	TypeInt64        = C.FTN_TYPE_INT64
	TypeUint8        = C.FTN_TYPE_UINT8
	TypeUint16       = C.FTN_TYPE_UINT16
	TypeUint32       = C.FTN_TYPE_UINT32
	TypeUint64       = C.FTN_TYPE_UINT64
	TypeFloat        = C.FTN_TYPE_FLOAT
	TypeDouble       = C.FTN_TYPE_DOUBLE
	TypeArray        = C.FTN_TYPE_ARRAY
)

// GoStep, when set, is what the Go step that GoAdd adds runs; by default
// it logs its tag.
var GoStep func(as *engine.Steps, tag int)

//export ctGoAdd
func ctGoAdd(bsi *C.FutoInAsyncSteps, tag C.int) {
	// The running C step adds a Go step through abi.Wrap of its own
	// pointer, between two C adds: the three must keep their order.
	t := int(tag)
	abi.Wrap(unsafe.Pointer(bsi)).Add(func(as *engine.Steps) {
		if GoStep != nil {
			GoStep(as, t)
			return
		}
		Push(t)
	})
}

// The foreign engine.

// ForeignNew returns a new root of the foreign C engine.
func ForeignNew() unsafe.Pointer { return unsafe.Pointer(C.fe_new()) }

// ForeignRun runs the foreign engine's ready steps until none is left.
func ForeignRun() { C.fe_run() }

// ForeignDone reports how root's flow ended: 0 not yet, 1 success, 2
// error, 3 canceled; and the error code.
func ForeignDone(root unsafe.Pointer) (int, string) {
	var code *C.char
	d := C.fe_done((*C.FutoInAsyncSteps)(root), &code)
	return int(d), C.GoString(code)
}

// ForeignResult returns the values root's flow ended with.
func ForeignResult(root unsafe.Pointer) []engine.Value {
	var p *C.FutoInBinaryValue
	n := int(C.fe_complete_args((*C.FutoInAsyncSteps)(root), &p))
	vals := unsafe.Slice(p, n)
	var out []engine.Value
	for i := range vals {
		if vals[i]._type != nil {
			out = append(out, abi.ToValue(unsafe.Pointer(&vals[i])))
		}
	}
	return out
}

// ForeignFree frees a foreign root (canceling what runs).
func ForeignFree(root unsafe.Pointer) { C.fe_free((*C.FutoInAsyncSteps)(root)) }

// ForeignLive returns how many foreign steps (roots included) are alive.
func ForeignLive() int { return int(C.fe_live()) }

// ForeignFireTimeouts fails every waiting step that set a timeout with
// Timeout.
func ForeignFireTimeouts() { C.fe_fire_timeouts() }

// ForeignUnhandled returns how many times an unhandled_error callback ran.
func ForeignUnhandled() int { return int(C.fe_unhandled_calls()) }

// ForeignExecute executes a foreign root with no unhandled_error callback.
func ForeignExecute(root unsafe.Pointer) { C.fe_execute((*C.FutoInAsyncSteps)(root)) }

// Noop calls an empty C function: the floor under every C step, measured
// beside it.
func Noop() { C.ct_noop() }
