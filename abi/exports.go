package abi

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// The vtable entries that call into Go. Each finds the image's step, checks
// that the call may be made from here, and calls the engine under guard,
// so that an Error or a misuse is recorded instead of unwinding through C.

// target returns the step behind b for op: the image's step on its own
// loop, or a root (or a root's level-0 parallel accessor) from the thread
// that builds it. Otherwise it reports the misuse and returns nil.
func target(b *C.asx_bsi, op string) *engine.Steps {
	if b == nil {
		return nil
	}
	g := entry(b)
	r := g.r.Load()
	if b.mode == C.ASX_STALE || r == nil {
		if r != nil {
			reportStale(r, op)
		}
		return nil
	}
	if r.IsSameThread() {
		as := g.steps
		if b.mode == C.ASX_RECORD && b.nadd > 0 {
			safeFlush(as, b) // keep the order sub-steps were added in
		}
		return as
	}
	if b.built != 0 {
		// A root, or a step of a root being built: the holder's thread
		// owns it (the engine checks what it may do from here).
		return g.steps
	}
	// A step's image used off its loop: the loop owns its Go side, which
	// may be another step's by now; only its External (success,
	// handle_error) is for other threads.
	return nil
}

func reportStale(r *reactor.Reactor, op string) {
	engine.X.
		ReportMisuse(r, op+": called with a FutoInAsyncSteps* kept past its step")
}

func panicText(v any) string { return fmt.Sprint(v) }

// safeFlush hands the recorded adds to the engine from inside a C
// callback: a misuse there is recorded, never unwound through C.
func safeFlush(as *engine.Steps, b *C.asx_bsi) {
	defer guard(as)
	flushAdds(as, b)
}

//export asxGoFlush
func asxGoFlush(b *C.asx_bsi) {
	target(b, "add") // flushes
}

//export asxGoAdd
func asxGoAdd(b *C.asx_bsi, data unsafe.Pointer, f C.FutoInAsyncSteps_execute_callback, eh C.FutoInAsyncSteps_error_callback) {
	as := target(b, "add")
	if as == nil {
		return
	}
	defer guard(as)
	if f == nil {
		engine.X.
			AddBinding(as, nil, nil, nil) // the engine's misuse: nil execute callback
		return
	}
	addC(as, nil, f, eh, data)
}

// addC adds a C step to as; p is as's reactor's pool when the caller
// knows it runs on the loop, else nil.
func addC(as *engine.Steps, p *pool, f C.FutoInAsyncSteps_execute_callback, eh C.FutoInAsyncSteps_error_callback, data unsafe.Pointer) {
	var c *C.asx_bsi
	if p != nil {
		c = newImageOn(as, p, C.ASX_IDLE)
	} else {
		c = newImage(as, C.ASX_IDLE)
	}
	c.f, c.eh, c.data = f, eh, data
	var ef engine.ErrorFunc
	if eh != nil {
		ef = runCError
	}
	if s := engine.X.AddBinding(as, runC, ef, unsafe.Pointer(c)); s != nil {
		entry(c).steps = s
	}
}

//export asxGoParallel
func asxGoParallel(b *C.asx_bsi, data unsafe.Pointer, eh C.FutoInAsyncSteps_error_callback) (p0 *C.FutoInAsyncSteps) {
	// After a misuse, the step's own pointer: calls on it stay misuses of
	// this step, and C never gets NULL to crash on.
	p0 = &b.base
	as := target(b, "parallel")
	if as == nil {
		return
	}
	defer guard(as)
	var ef engine.ErrorFunc
	if eh != nil {
		ef = runCError
	}
	p := as.Parallel(ef)
	if p == as {
		return
	}
	c := imageOf(p, C.ASX_DIRECT)
	if c == nil {
		return
	}
	c.eh, c.data = eh, data
	return &c.base
}

//export asxGoState
func asxGoState(b *C.asx_bsi, data unsafe.Pointer, name *C.char, allocate, cleanup unsafe.Pointer) unsafe.Pointer {
	as := target(b, "stateVariable")
	if as == nil {
		return nil
	}
	defer guard(as)
	root := engine.X.Root(as)
	if root == nil {
		return nil
	}
	rb := imageOf(root, C.ASX_DIRECT)
	if rb == nil {
		return nil
	}
	rg := entry(rb)
	if rg.root == nil {
		rg.root = &rootExtra{}
	}
	rx := rg.root
	n := C.GoString(name)
	if n == "error_info" && allocate == nil {
		// The same C string while ErrorInfo is unchanged: a caller may
		// hold it until the flow's next error.
		info := as.State().ErrorInfo
		if b.mode == C.ASX_RECORD && b.rec&C.ASX_R_ERROR != 0 {
			// Raised by the running callback, which reads it back (the
			// C++ wrapper's error_info() after errorNoThrow): the engine
			// takes the record when the callback returns.
			info = C.GoString(b.info)
		}
		if rx.errInfo == nil || info != rx.errInfoS {
			if rx.errInfo != nil {
				C.free(unsafe.Pointer(rx.errInfo))
			}
			rx.errInfo, rx.errInfoS = C.CString(info), info
		}
		return unsafe.Pointer(rx.errInfo)
	}
	for _, v := range rx.vars {
		if v.name == n {
			return v.value
		}
	}
	if allocate == nil {
		engine.X.
			ReportMisuse(as.Reactor(), "stateVariable: NULL allocate for a new variable "+n)
		return nil
	}
	v := C.asx_call_alloc((*[0]byte)(allocate), data)
	rx.vars = append(rx.vars, stateVar{name: n, value: v, data: data, cleanup: cleanup})
	return v
}

//export asxGoStack
func asxGoStack(b *C.asx_bsi, size C.size_t) unsafe.Pointer {
	if as := target(b, "stack"); as != nil {
		engine.X.
			ReportMisuse(as.Reactor(), "stack: called outside the step's callback")
	}
	return nil
}

//export asxGoSuccess
func asxGoSuccess(b *C.asx_bsi, args *C.FutoInArgs) {
	var vals [engine.MaxArgs]engine.Value
	n := 0
	if args != nil {
		n = argsOf(args, &vals)
	}
	if x := external(b); x != nil {
		if !x.Success(vals[:n]...) {
			dropAll(vals[:n]) // the step is gone: nobody took them
		}
		return
	}
	as := target(b, "success")
	if as == nil {
		dropAll(vals[:n]) // no step takes them: C gave them away all the same
		return
	}
	defer guard(as)
	succeed(as, vals[:n])
}

// external returns the External of a waiting step's image when the call is
// not made from inside that step's own callback.
func external(b *C.asx_bsi) *engine.External {
	if b == nil || b.mode == C.ASX_STALE {
		return nil
	}
	g := entry(b)
	x := g.ext.Load()
	if x == nil {
		return nil
	}
	if r := g.r.Load(); r != nil && r.IsSameThread() && b.mode == C.ASX_DIRECT && g.steps != nil && !x.Valid() {
		return nil
	}
	return x
}

//export asxGoError
func asxGoError(b *C.asx_bsi, code, info *C.char) {
	c, i := goString(code), C.GoString(info)
	if c == "" {
		c = engine.InternalError
	}
	if x := external(b); x != nil {
		x.Error(c, i)
		return
	}
	as := target(b, "handle_error")
	if as == nil {
		return
	}
	defer guard(as)
	as.Error(c, i)
}

// asxGoArm makes the recording step finishable from any thread at once
// (waitExternal, setTimeout, setCancel): a worker it hands its pointer to
// may complete it before the callback returns.
//
//export asxGoArm
func asxGoArm(b *C.asx_bsi) {
	as := entry(b).steps // the recording callback's own step, on its loop
	defer guard(as)
	arm(as, b)
}

//export asxGoSetTimeout
func asxGoSetTimeout(b *C.asx_bsi, ms C.uint32_t) {
	if as := target(b, "setTimeout"); as != nil {
		defer guard(as)
		as.SetTimeout(time.Duration(ms) * time.Millisecond)
		arm(as, b)
	}
}

//export asxGoSetCancel
func asxGoSetCancel(b *C.asx_bsi, data unsafe.Pointer, ch C.FutoInAsyncSteps_cancel_callback) {
	if as := target(b, "setCancel"); as != nil {
		defer guard(as)
		if ch == nil {
			as.SetCancel(nil)
			engine.X.
				ReportMisuse(as.Reactor(), "setCancel: NULL cancel callback")
			return
		}
		b.ch, b.ch_data = ch, data
		as.SetCancel(runCCancel)
		arm(as, b)
	}
}

//export asxGoWait
func asxGoWait(b *C.asx_bsi) {
	if as := target(b, "waitExternal"); as != nil {
		defer guard(as)
		as.WaitExternal()
		arm(as, b)
	}
}

// body is the state of a C loop: its body and data.
type body struct {
	f    unsafe.Pointer
	data unsafe.Pointer
}

//export asxGoLoop
func asxGoLoop(b *C.asx_bsi, data, f unsafe.Pointer, label *C.char) {
	as := target(b, "loop")
	if as == nil {
		return
	}
	defer guard(as)
	if f == nil {
		as.Loop(nil)
		return
	}
	bd := body{f: f, data: data}
	as.Loop(func(as *engine.Steps) { runBody(as, bd, 0, false) }, labels(label)...)
}

//export asxGoRepeat
func asxGoRepeat(b *C.asx_bsi, data unsafe.Pointer, count C.size_t, f unsafe.Pointer, label *C.char) {
	as := target(b, "repeat")
	if as == nil {
		return
	}
	defer guard(as)
	if f == nil {
		as.Repeat(0, nil)
		return
	}
	bd := body{f: f, data: data}
	as.Repeat(int(count), func(as *engine.Steps, i int) { runBody(as, bd, i, true) }, labels(label)...)
}

// runBody runs one iteration of a C loop body on the iteration's accessor.
func runBody(as *engine.Steps, bd body, i int, counted bool) {
	b := imageOf(as, C.ASX_IDLE)
	if b == nil {
		return
	}
	b.loop_f, b.loop_data = bd.f, bd.data
	p := poolOf(as)
	prev := p.record(b)
	if counted {
		C.asx_repeat_body(b, C.size_t(i))
	} else {
		C.asx_loop_body(b)
	}
	finish(as, b, p, prev, 0)
}

func labels(label *C.char) []string {
	if label == nil {
		return nil
	}
	return []string{C.GoString(label)}
}

//export asxGoLoopCtl
func asxGoLoopCtl(b *C.asx_bsi, label *C.char, cont C.int) {
	as := target(b, "breakLoop")
	if as == nil {
		return
	}
	defer guard(as)
	if cont != 0 {
		as.Continue(labels(label)...)
	}
	as.Break(labels(label)...)
}

//export asxGoExecute
func asxGoExecute(b *C.asx_bsi, data unsafe.Pointer, unhandled C.FutoInAsyncSteps_error_callback) {
	as := target(b, "execute")
	if as == nil {
		return
	}
	defer guard(as)
	if !engine.X.IsRoot(as) {
		engine.X.
			ReportMisuse(as.Reactor(), "execute: not a root")
		return
	}
	g := entry(b)
	if g.root == nil {
		g.root = &rootExtra{}
	}
	g.root.unhandled, g.root.data = unhandled, data
	engine.X.
		OnEnd(as, rootEnded)
	as.Execute()
}

// rootEnded calls a C root's unhandled_error when its flow ends with an
// error (not when it is canceled).
func rootEnded(root *engine.Steps, code string) {
	b := (*C.asx_bsi)(engine.X.Binding(root))
	if b == nil || code == "" || code == engine.Canceled {
		return
	}
	rx := entry(b).root
	if rx == nil || rx.unhandled == nil {
		return
	}
	cs, free := cCode(code)
	C.asx_unhandled(rx.unhandled, &b.base, rx.data, cs)
	if free {
		C.free(unsafe.Pointer(cs))
	}
}

//export asxGoCancel
func asxGoCancel(b *C.asx_bsi) {
	if as := target(b, "cancel"); as != nil {
		defer guard(as)
		as.Cancel()
	}
}

//export asxGoAddSync
func asxGoAddSync(b *C.asx_bsi, s *C.FutoInSync, data unsafe.Pointer, f C.FutoInAsyncSteps_execute_callback, eh C.FutoInAsyncSteps_error_callback) {
	as := target(b, "addSync")
	if as == nil {
		return
	}
	defer guard(as)
	if s == nil || f == nil {
		engine.X.
			ReportMisuse(as.Reactor(), "addSync: NULL sync object or execute callback")
		return
	}
	step, onerr := cClosures(f, eh, data)
	as.Sync(syncOf(s), step, onerr)
}

// cClosures returns a C step and error handler as Go callbacks that bind
// an image to whichever accessor runs them: what Sync objects, which add
// their own frames around the section, need.
func cClosures(f C.FutoInAsyncSteps_execute_callback, eh C.FutoInAsyncSteps_error_callback, data unsafe.Pointer) (engine.ExecFunc, engine.ErrorFunc) {
	step := func(as *engine.Steps) {
		b := imageOf(as, C.ASX_IDLE)
		if b == nil {
			return
		}
		b.f, b.eh, b.data = f, eh, data
		runC(as)
	}
	if eh == nil {
		return step, nil
	}
	return step, func(as *engine.Steps, code string) {
		b := imageOf(as, C.ASX_IDLE)
		if b == nil {
			return
		}
		b.eh, b.data = eh, data
		runCError(as, code)
	}
}

//export asxGoRootID
func asxGoRootID(b *C.asx_bsi) C.ptrdiff_t {
	if as := target(b, "rootId"); as != nil {
		return C.ptrdiff_t(as.RootID())
	}
	return 0
}

//export asxGoIsValid
func asxGoIsValid(b *C.asx_bsi) C.int {
	if b == nil || b.mode == C.ASX_STALE {
		return 0
	}
	g := entry(b)
	if b.built == builtRoot {
		// A root is in a valid state for usage (the spec's boolean cast)
		// while it may be given steps: not released and not executing,
		// as in the C++ reference, whose wrapper checks !root inside a
		// step. Go reads the same as Valid() && !Executing(); both are
		// safe from any thread.
		if g.steps.Valid() && !g.steps.Executing() {
			return 1
		}
		return 0
	}
	if r := g.r.Load(); r == nil || !r.IsSameThread() {
		// Off the loop the step's Go side is the loop's: the image's mode
		// (C memory) is all that can be read here.
		return 1
	}
	if g.steps.Valid() {
		return 1
	}
	return 0
}

//export asxGoNewInstance
func asxGoNewInstance(b *C.asx_bsi) *C.FutoInAsyncSteps {
	if b == nil {
		return nil
	}
	g := entry(b)
	r := g.r.Load()
	if b.mode == C.ASX_STALE || r == nil {
		return nil
	}
	return newRoot(r)
}

// newRoot makes a root for C: asyncsteps_new and newInstance.
func newRoot(r *reactor.Reactor) *C.FutoInAsyncSteps {
	root := engine.New(r)
	b := imageOf(root, C.ASX_DIRECT)
	g := entry(b)
	g.root = &rootExtra{owned: true}
	return &b.base
}

//export asxGoFree
func asxGoFree(b *C.asx_bsi) {
	as := target(b, "free")
	if as == nil {
		return
	}
	defer guard(as)
	if !engine.X.IsRoot(as) {
		engine.X.
			ReportMisuse(as.Reactor(), "free: not a root")
		return
	}
	as.Release()
}

//export asxGoSchedule
func asxGoSchedule(b *C.asx_bsi, deferred C.int, ms C.uint32_t, data, cb unsafe.Pointer, out *C.FutoInHandle) {
	r := reactorOf(b)
	if r == nil || cb == nil {
		return
	}
	fn := func() { C.asx_call_void((*[0]byte)(cb), data) }
	var h reactor.Handle
	if deferred != 0 {
		h = r.Deferred(time.Duration(ms)*time.Millisecond, fn)
	} else {
		h = r.Immediate(fn)
	}
	w := (*[3]uint64)(unsafe.Pointer(out))
	w[0], w[1], w[2] = h.Words()
}

func reactorOf(b *C.asx_bsi) *reactor.Reactor {
	if b == nil {
		return nil
	}
	return entry(b).r.Load()
}

func schedHandle(h *C.FutoInHandle) reactor.Handle {
	if h == nil {
		return reactor.Handle{}
	}
	w := (*[3]uint64)(unsafe.Pointer(h))
	return reactor.HandleFromWords(w[0], w[1], w[2])
}

//export asxGoSchedCancel
func asxGoSchedCancel(b *C.asx_bsi, h *C.FutoInHandle) {
	if r := reactorOf(b); r != nil {
		r.Cancel(schedHandle(h))
	}
}

//export asxGoSchedIsValid
func asxGoSchedIsValid(b *C.asx_bsi, h *C.FutoInHandle) C.int {
	if r := reactorOf(b); r != nil && r.IsValid(schedHandle(h)) {
		return 1
	}
	return 0
}

//export asxGoIsSameThread
func asxGoIsSameThread(b *C.asx_bsi) C.int {
	if r := reactorOf(b); r != nil && r.IsSameThread() {
		return 1
	}
	return 0
}
