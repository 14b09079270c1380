package abi

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
)

// Binary returns the FutoInAsyncSteps* of as for C code: the image of the
// running step (or of a root, or of the accessor Parallel returned). It is
// valid as long as as is: until the step ends, or the root is released.
// Nil for a nil or stale accessor. For an accessor made by Wrap it returns
// the foreign pointer it wraps.
func Binary(as *engine.Steps) unsafe.Pointer {
	if as == nil {
		return nil
	}
	if f, ok := engine.X.ForeignOf(as).(*foreign); ok {
		return unsafe.Pointer(f.bsi)
	}
	b := imageOf(as, C.ASX_DIRECT)
	if b == nil {
		return nil
	}
	return unsafe.Pointer(&b.base)
}

// runC is the ExecFunc of every C step: one call into C, then what the
// callback recorded is handed to the engine.
func runC(as *engine.Steps) {
	b := (*C.asx_bsi)(engine.X.Binding(as))
	p := poolOf(as)
	prev := p.record(b)
	n := fillArgs(as, b, p)
	C.asx_exec(C.uintptr_t(uintptr(unsafe.Pointer(b))))
	if chainable(b, p) {
		if max := engine.X.ChainBudget(as); max > 0 {
			runChain(as, b, p, prev, n, max)
			return
		}
	}
	finish(as, b, p, prev, n)
}

// finish hands the engine what a C callback of b recorded, n being how
// many arguments it was given; prev is what p.record returned.
func finish(as *engine.Steps, b *C.asx_bsi, p *pool, prev *C.asx_bsi, n int) {
	b.mode = C.ASX_IDLE
	var vals [engine.MaxArgs]engine.Value
	k := 0
	if b.rec&C.ASX_R_SUCCESS != 0 {
		// Read the values while the arguments' pins and handles hold:
		// C may pass on what it received.
		k = outArgs(as, b, &vals)
	}
	if n > 0 || p.pinned || len(p.handles) > 0 {
		if n > 0 && engine.X.OwnsArgs(as) {
			takenOver(as, b, n)
		}
		clearArgs(b, n, p)
	}
	if b.rec != 0 {
		apply(as, b, vals[:k]) // may unwind: the scratch is taken back by the next record
	}
	p.end(b, prev)
}

// takenOver disowns the owned arguments whose slots the callback emptied
// (type NULL): futoin_reset_binval ran their cleanup, so the flow must not
// run it again. The C++ reference's wrapper takes every value it receives
// that way. Runs before apply, so the success that follows drops only what
// the flow still owns.
func takenOver(as *engine.Steps, b *C.asx_bsi, n int) {
	in := (*[4]C.FutoInBinaryValue)(unsafe.Pointer(&b.s.in))
	for i := 0; i < n; i++ {
		if in[i]._type == nil {
			engine.X.Disown(as, i)
		}
	}
}

// outArgs converts the values C recorded with success. A descriptor that
// is one of the Go values the callback received becomes that Value again,
// so the collector keeps seeing its payload.
func outArgs(as *engine.Steps, b *C.asx_bsi, vals *[engine.MaxArgs]engine.Value) int {
	n := argsOf(&b.s.out, vals)
	b.s.out = C.FutoInArgs{}
	for i := 0; i < n; i++ {
		if typ, _, _, _, binary := engine.X.BinaryParts(vals[i]); binary && isGoType(typ) {
			vals[i] = goValueOf(as.Args(), vals[i])
		}
	}
	return n
}

// goValueOf returns the Go value that v, a descriptor made in Go (from the
// callback's arguments), stands for: the argument itself, or for a string
// or byte slice the part of it v covers (C may pass on a zero-copy part).
// Other descriptors (from an earlier callback) stay views.
func goValueOf(in *engine.Args, v engine.Value) engine.Value {
	_, w, _, n, _ := engine.X.BinaryParts(v)
	for j := 0; j < in.Len(); j++ {
		a := in.At(j)
		_, aw, _, an, ab := engine.X.BinaryParts(a)
		if ab || a.Kind() != v.Kind() {
			continue
		}
		switch a.Kind() {
		case engine.KindStr, engine.KindBytes:
			if w < aw || w+uint64(n) > aw+uint64(an) {
				continue
			}
			off := int(w - aw)
			if a.Kind() == engine.KindStr {
				return engine.Str(a.Str()[off : off+int(n)])
			}
			return engine.Bytes(a.Bytes()[off : off+int(n)])
		default:
			if aw == w {
				return a
			}
		}
	}
	return v
}

// runCError is the ErrorFunc of C steps and C parallel steps.
func runCError(as *engine.Steps, code string) {
	b := (*C.asx_bsi)(engine.X.Binding(as))
	p := poolOf(as)
	cs, free := cCode(code)
	b.handler = 1
	prev := p.record(b)
	C.asx_handle(b, cs)
	b.handler = 0
	if free {
		C.free(unsafe.Pointer(cs))
	}
	finish(as, b, p, prev, 0)
}

// runCCancel is the CancelFunc a C step's setCancel installs.
func runCCancel(as *engine.Steps) {
	b := (*C.asx_bsi)(engine.X.Binding(as))
	if b != nil && b.ch != nil {
		C.asx_cancel_cb(b)
	}
}

// flushAdds hands the adds recorded so far to the engine, each a C step
// with an image of its own.
func flushAdds(as *engine.Steps, b *C.asx_bsi) {
	n := int(b.nadd)
	b.nadd = 0
	adds := b.s.adds[:n]
	p := poolOf(as) // flushes run on the loop, inside the step's callback
	for i := range adds {
		a := &adds[i]
		addC(as, p, a.f, a.eh, a.data)
		*a = C.asx_add{}
	}
	if b.nadd == 0 {
		b.rec &^= C.ASX_R_ADD
	}
}

// apply replays, in the engine, what a C callback recorded: sub-steps in
// the order added, then waiting, timeout and cancel handler, then the
// outcome (vals: the success values, already converted). An error (or a
// misuse) unwinds from here, in Go; success values it leaves unused are
// dropped, since C gave them away.
func apply(as *engine.Steps, b *C.asx_bsi, vals []engine.Value) {
	rec := b.rec
	b.rec = 0
	b.added = 0
	if rec&C.ASX_R_MISUSE != 0 {
		b.nadd = 0
		info := C.GoString(b.misuse)
		b.misuse = nil
		freeError(b)
		dropGiven(as, vals)
		as.Error(engine.InternalError, info)
	}
	if engine.X.Raised(as) {
		b.nadd = 0 // a call into Go already failed the step
		freeError(b)
		dropGiven(as, vals)
		return
	}
	if rec&C.ASX_R_ADD != 0 {
		flushAdds(as, b)
	}
	if rec&(C.ASX_R_WAIT|C.ASX_R_TIMEOUT|C.ASX_R_CANCEL) != 0 {
		arm(as, b)
		if rec&C.ASX_R_TIMEOUT != 0 {
			as.SetTimeout(time.Duration(b.timeout_ms) * time.Millisecond)
		}
		if rec&C.ASX_R_CANCEL != 0 {
			as.SetCancel(runCCancel)
		}
	}
	if rec&C.ASX_R_ERROR != 0 {
		code, info := goString(b.code), C.GoString(b.info)
		freeError(b)
		if code == "" {
			code = engine.InternalError
		}
		dropGiven(as, vals)
		as.Error(code, info)
	}
	if rec&C.ASX_R_SUCCESS != 0 {
		succeed(as, vals)
	}
}

// succeed is as.Success(vals...), first telling the engine when vals
// carry owned values, whose cleanups it then runs.
func succeed(as *engine.Steps, vals []engine.Value) {
	for i := range vals {
		if engine.X.Owned(vals[i]) {
			engine.X.
				TakeOwned(as)
			break
		}
	}
	as.Success(vals...)
}

// freeError frees the copies handle_error recorded.
func freeError(b *C.asx_bsi) {
	if b.code != nil {
		C.free(unsafe.Pointer(b.code))
	}
	if b.info != nil {
		C.free(unsafe.Pointer(b.info))
	}
	b.code, b.info = nil, nil
}

// dropGiven runs the cleanups of values a callback gave away that never
// reached the engine, but not of those it passed on: as's flow still owns
// them, and drops them itself.
func dropGiven(as *engine.Steps, vals []engine.Value) {
	in := as.Args()
	for i := range vals {
		kept := false
		for j := 0; j < in.Len() && !kept; j++ {
			kept = in.At(j) == vals[i]
		}
		if !kept && engine.X.Owned(vals[i]) {
			dropValue(&vals[i])
		}
	}
}

// dropAll runs the cleanups of values that never reached the engine.
func dropAll(vals []engine.Value) {
	for i := range vals {
		if engine.X.Owned(vals[i]) {
			dropValue(&vals[i])
		}
	}
}

// arm makes the step finishable from outside its callback: C's success
// and handle_error then go through its External, from any thread.
func arm(as *engine.Steps, b *C.asx_bsi) {
	g := entry(b)
	if g.ext.Load() != nil {
		return
	}
	// A fresh one each time (one small allocation per waiting C step): a
	// completer on another thread may still read the previous one.
	x := as.External()
	g.ext.Store(&x)
}

// guard turns a panic that a Go call made inside a C callback (the engine
// unwinding an Error or a misuse) into the engine's recorded raise: a Go
// panic must not unwind through C frames. The raise stays recorded, and
// the engine acts on it when the C callback returns.
func guard(as *engine.Steps) {
	if v := recover(); v != nil && !engine.X.Raised(as) {
		engine.X.
			ReportMisuse(as.Reactor(), "abi: panic in a call from C: "+panicText(v))
	}
}

// AddC adds to as a step whose callbacks are C functions: f, a
// FutoInAsyncSteps_execute_callback, and eh, a
// FutoInAsyncSteps_error_callback or nil, both called with data. It is what
// bsi->api->add does from C, for Go code that holds C function pointers,
// without crossing into C and back. It returns as.
func AddC(as *engine.Steps, f, eh, data unsafe.Pointer) *engine.Steps {
	if as == nil {
		return nil
	}
	if x, ok := engine.X.ForeignOf(as).(*foreign); ok {
		C.asx_f_add(x.bsi, data, C.FutoInAsyncSteps_execute_callback(f), C.FutoInAsyncSteps_error_callback(eh))
		return as
	}
	if f == nil {
		engine.X.
			AddBinding(as, nil, nil, nil) // the engine's misuse: nil execute callback
		return as
	}
	if bin := engine.X.Binding(as); bin != nil {
		if b := (*C.asx_bsi)(bin); b.mode == C.ASX_RECORD && b.nadd > 0 {
			safeFlush(as, b) // after the adds its C callback recorded so far
		}
	}
	addC(as, nil, C.FutoInAsyncSteps_execute_callback(f), C.FutoInAsyncSteps_error_callback(eh), data)
	return as
}
