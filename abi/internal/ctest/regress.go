package ctest

/*
#cgo CFLAGS: -I${SRCDIR}/../.. -std=gnu11 -Wall
#include <stdint.h>
#include "futoin.h"
void rv_add(FutoInAsyncSteps* bsi, int which, intptr_t data);
void rv_reset(void);
int rv_is_valid(FutoInAsyncSteps* bsi);
void rv_add_outer(FutoInAsyncSteps* bsi);
void rv_add_trim(FutoInAsyncSteps* bsi);
void rv_complete_flag(FutoInAsyncSteps* bsi);
int rv_flag_get(void);
void rv_flag_clear(void);
void rv_add_wait_go(FutoInAsyncSteps* bsi, intptr_t ms);
extern FutoInAsyncSteps* rv_kept;
extern int rv_body_runs;
*/
import "C"

import (
	"unsafe"

	"github.com/asyncsteps/asyncsteps/abi"
	"github.com/asyncsteps/asyncsteps/engine"
)

// Regression steps (regress.c), for abi/regress_test.go.
const (
	RvErrBreak    = 0 // repeat body: handle_error then breakLoop
	RvErrContinue = 1 // repeat body: handle_error then continueLoop
	RvPassTwice   = 2 // success(received args) twice
	RvPassFail    = 3 // success(received args) then handle_error
	RvWaitTimeout = 4 // setTimeout(data); handler adds a CT_WAIT(7)
)

// RvAdd adds regression step which through as's FutoInAsyncSteps*.
func RvAdd(as *engine.Steps, which, data int) {
	C.rv_add((*C.FutoInAsyncSteps)(abi.Binary(as)), C.int(which), C.intptr_t(data))
}

// RvReset clears the regression steps' globals.
func RvReset() { C.rv_reset() }

// RvKept is the bsi RvWaitTimeout kept.
func RvKept() unsafe.Pointer { return unsafe.Pointer(C.rv_kept) }

// RvBodyRuns is how many loop bodies ran.
func RvBodyRuns() int { return int(C.rv_body_runs) }

// RvIsValid calls bsi->api->isValid(bsi).
func RvIsValid(bsi unsafe.Pointer) bool { return C.rv_is_valid((*C.FutoInAsyncSteps)(bsi)) != 0 }

// RvHook is what rvDrive runs: the test drives the reactor there.
var RvHook func()

//export rvDrive
func rvDrive() {
	if RvHook != nil {
		RvHook()
	}
}

// RvAddOuter adds the step that records success(INT32 555) and then calls
// RvHook from inside its callback.
func RvAddOuter(as *engine.Steps) { C.rv_add_outer((*C.FutoInAsyncSteps)(abi.Binary(as))) }

// RvAddTrim adds a C step that passes on arg0 with its length cut to 3.
func RvAddTrim(as *engine.Steps) { C.rv_add_trim((*C.FutoInAsyncSteps)(abi.Binary(as))) }

// RvCompleteFlag completes bsi with Int 1 from C, then raises a C flag.
func RvCompleteFlag(bsi unsafe.Pointer) { C.rv_complete_flag((*C.FutoInAsyncSteps)(bsi)) }

// RvFlag reads the C flag (no Go synchronisation).
func RvFlag() bool { return C.rv_flag_get() != 0 }

// RvFlagClear lowers it.
func RvFlagClear() { C.rv_flag_clear() }

// RvExt is the External of the Go step rvGoWaitAdd added (loop-written).
var RvExt engine.External

//export rvGoWaitAdd
func rvGoWaitAdd(bsi *C.FutoInAsyncSteps) {
	abi.Wrap(unsafe.Pointer(bsi)).Add(func(as *engine.Steps) { RvExt = as.External() })
}

// RvAddWaitGo adds a C step that sets a timeout of ms and whose handler
// adds a Go step waiting on RvExt; RvKept is the C step's bsi.
func RvAddWaitGo(as *engine.Steps, ms int) {
	C.rv_add_wait_go((*C.FutoInAsyncSteps)(abi.Binary(as)), C.intptr_t(ms))
}
