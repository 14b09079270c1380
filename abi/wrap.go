package abi

/*
#include <stdlib.h>
#include <string.h>
#include "bridge.h"
*/
import "C"

import (
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Wrap adopts a FutoInAsyncSteps* (spec 2.2.1's wrap()). One of ours
// (from Binary or the C library) is a cast back to its *engine.Steps.
// Another implementation's is wrapped: the *engine.Steps returned forwards
// every call through that vtable, so ordinary Go step code runs inside a
// flow the other engine drives. Go callbacks added through it are called
// back by the other engine through this package's trampolines.
func Wrap(p unsafe.Pointer) *engine.Steps {
	if p == nil {
		return nil
	}
	bsi := (*C.FutoInAsyncSteps)(p)
	if C.asx_is_ours(bsi) != 0 {
		b := (*C.asx_bsi)(p)
		if b.mode == C.ASX_STALE {
			return nil
		}
		enterChained(b) // Go code gets the step as the engine's running one
		as := entry(b).steps
		if b.mode == C.ASX_RECORD && b.nadd > 0 {
			safeFlush(as, b) // Go adds through as come after C's earlier ones
		}
		return as
	}
	return engine.X.NewForeign(&foreign{bsi: bsi})
}

// foreign forwards engine.Steps calls to another implementation's vtable.
type foreign struct {
	bsi        *C.FutoInAsyncSteps
	args       *C.FutoInArgs // the args of the callback this accessor was made for
	a          engine.Args
	aok        bool
	inCallback bool // made for a callback of bsi's step: its stack is there
}

// keep ties the Go callbacks behind h to the step of x's callback: its
// stack cleanup deletes h when that step ends, which is after any step it
// added (they are its sub-steps), run or not. Outside a callback x is a
// root being built: h is deleted when the root is released through Go.
func (x *foreign) keep(h cgo.Handle) bool {
	if x.inCallback {
		C.asx_f_keep(x.bsi, handlePtr(h))
		return true
	}
	rootHandles.Lock()
	if rootHandles.m == nil {
		rootHandles.m = map[*C.FutoInAsyncSteps][]cgo.Handle{}
	}
	rootHandles.m[x.bsi] = append(rootHandles.m[x.bsi], h)
	rootHandles.Unlock()
	return true
}

// rootHandles are the Go callbacks added to foreign roots while they were
// built, by root: Release deletes them.
var rootHandles struct {
	sync.Mutex
	m map[*C.FutoInAsyncSteps][]cgo.Handle
}

// goCallbacks is what a Go step added to a foreign flow is: the foreign
// engine holds its cgo.Handle as the step's data, and deletes it through
// the step's stack cleanup once the step has run.
type goCallbacks struct {
	kept   bool // deleted with the adding step (foreign.keep), not by its own run
	f      engine.ExecFunc
	eh     engine.ErrorFunc
	cancel engine.CancelFunc
	loop   engine.ExecFunc
	rep    func(as *engine.Steps, i int)
}

func (x *foreign) Add(f engine.ExecFunc, onerror engine.ErrorFunc) {
	cb := &goCallbacks{f: f, eh: onerror}
	h := cgo.NewHandle(cb)
	cb.kept = x.keep(h)
	var eh C.FutoInAsyncSteps_error_callback
	if onerror != nil {
		eh = C.asx_f_error_cb
	}
	C.asx_f_add(x.bsi, handlePtr(h), C.asx_f_exec_cb, eh)
}

func (x *foreign) Parallel(onerror engine.ErrorFunc) *engine.Steps {
	var data unsafe.Pointer
	var eh C.FutoInAsyncSteps_error_callback
	if onerror != nil {
		h := cgo.NewHandle(&goCallbacks{eh: onerror})
		x.keep(h) // outside a callback (a root being built) it lives on
		data = handlePtr(h)
		eh = C.asx_f_error_cb
	}
	return Wrap(unsafe.Pointer(C.asx_f_parallel(x.bsi, data, eh)))
}

var stateName = C.CString("asyncsteps.go.State")

func (x *foreign) State() *engine.State {
	slot := (*uintptr)(C.asx_f_state(x.bsi, nil, stateName))
	if slot == nil {
		return nil
	}
	if *slot == 0 {
		*slot = uintptr(cgo.NewHandle(new(engine.State)))
	}
	return cgo.Handle(*slot).Value().(*engine.State)
}

func (x *foreign) Success(args []engine.Value) {
	var a C.FutoInArgs
	out := (*[4]C.FutoInBinaryValue)(unsafe.Pointer(&a))
	for i, v := range args {
		setForeign(&out[i], v)
	}
	C.asx_f_success(x.bsi, &a)
}

// setForeign writes v for another engine. Go memory cannot outlive Go's
// references, and the other engine keeps values as long as it likes: a Go
// string or byte slice crosses as a malloc'ed copy that the other engine
// frees through the type's cleanup. Values that came from C cross as they
// are; a Go object crosses as a cgo.Handle that the receiver owns.
func setForeign(bv *C.FutoInBinaryValue, v engine.Value) {
	_, _, _, _, binary := engine.X.BinaryParts(v)
	if !binary && v.Kind() == engine.KindObj {
		h := cgo.NewHandle(v.Obj())
		*bv = C.FutoInBinaryValue{}
		bv._type = &C.asx_goobj_owned
		*(*cgo.Handle)(unsafe.Pointer(&bv.custom_data)) = h
		return
	}
	if binary || v.Kind() != engine.KindStr && v.Kind() != engine.KindBytes {
		setC(bv, v, nil)
		return
	}
	b := v.Bytes()
	p := C.malloc(C.size_t(len(b) + 1))
	if len(b) > 0 {
		C.memcpy(p, unsafe.Pointer(unsafe.SliceData(b)), C.size_t(len(b)))
	}
	*(*byte)(unsafe.Add(p, len(b))) = 0
	bv._type = &C.asx_owned_string
	*(*unsafe.Pointer)(unsafe.Pointer(&bv.anon0)) = p
	bv.custom_data = nil
	bv.length = C.uint32_t(len(b))
}

func (x *foreign) Error(code, info string) {
	cc, free := cCode(code)
	ci := C.CString(info)
	C.asx_f_error(x.bsi, cc, ci)
	C.free(unsafe.Pointer(ci))
	if free {
		C.free(unsafe.Pointer(cc))
	}
}

func (x *foreign) SetTimeout(d time.Duration) {
	C.asx_f_set_timeout(x.bsi, C.uint32_t(d/time.Millisecond))
}

func (x *foreign) SetCancel(f engine.CancelFunc) {
	if f == nil {
		return
	}
	h := cgo.NewHandle(&goCallbacks{cancel: f})
	C.asx_f_keep(x.bsi, handlePtr(h))
	C.asx_f_set_cancel(x.bsi, handlePtr(h))
}

func (x *foreign) WaitExternal() { C.asx_f_wait(x.bsi) }

func (x *foreign) Args() *engine.Args {
	if !x.aok {
		x.aok = true
		if x.args != nil {
			var vals [engine.MaxArgs]engine.Value
			n := argsOf(x.args, &vals)
			x.a = engine.X.MakeArgs(vals[:n]...)
		}
	}
	return &x.a
}

func (x *foreign) Stack(size uintptr) unsafe.Pointer { return C.asx_f_stack(x.bsi, C.size_t(size)) }

func (x *foreign) Loop(body engine.ExecFunc, label string) {
	h := cgo.NewHandle(&goCallbacks{loop: body})
	C.asx_f_keep(x.bsi, handlePtr(h))
	cl := cLabel(label)
	C.asx_f_loop(x.bsi, handlePtr(h), cl)
	C.free(unsafe.Pointer(cl))
}

func (x *foreign) Repeat(count int, body func(as *engine.Steps, i int), label string) {
	h := cgo.NewHandle(&goCallbacks{rep: body})
	C.asx_f_keep(x.bsi, handlePtr(h))
	cl := cLabel(label)
	C.asx_f_repeat(x.bsi, handlePtr(h), C.size_t(count), cl)
	C.free(unsafe.Pointer(cl))
}

func cLabel(label string) *C.char {
	if label == "" {
		return nil
	}
	return C.CString(label)
}

func (x *foreign) Break(label string) {
	cl := cLabel(label)
	C.asx_f_break(x.bsi, cl)
	C.free(unsafe.Pointer(cl))
}

func (x *foreign) Continue(label string) {
	cl := cLabel(label)
	C.asx_f_continue(x.bsi, cl)
	C.free(unsafe.Pointer(cl))
}

func (x *foreign) Execute() { C.asx_f_execute(x.bsi) }
func (x *foreign) Cancel()  { C.asx_f_cancel(x.bsi) }

// Sync adds a section under obj through the other engine's addSync: obj
// crosses as a FutoInSync of ours (made once per object), whose lock and
// unlock the other engine calls.
func (x *foreign) Sync(obj engine.Sync, f engine.ExecFunc, onerror engine.ErrorFunc) {
	cb := &goCallbacks{f: f, eh: onerror}
	h := cgo.NewHandle(cb)
	cb.kept = x.keep(h)
	var eh C.FutoInAsyncSteps_error_callback
	if onerror != nil {
		eh = C.asx_f_error_cb
	}
	C.asx_f_add_sync(x.bsi, binarySync(obj), handlePtr(h), C.asx_f_exec_cb, eh)
}

// binarySyncs maps Go sync objects handed to other engines to their
// FutoInSync: one each, for the life of the process.
var binarySyncs sync.Map // engine.Sync -> *C.FutoInSync

func binarySync(obj engine.Sync) *C.FutoInSync {
	if fs, ok := obj.(foreignSync); ok {
		return fs.s // another engine's object, wrapped on its way in
	}
	if s, ok := binarySyncs.Load(obj); ok {
		return s.(*C.FutoInSync)
	}
	mine := newCSync(obj)
	s, loaded := binarySyncs.LoadOrStore(obj, mine)
	if loaded {
		asyncsteps_sync_free(mine) // lost a race: the stored one is the object's
	}
	return s.(*C.FutoInSync)
}

func (x *foreign) RootID() uintptr { return uintptr(C.asx_f_root_id(x.bsi)) }
func (x *foreign) Valid() bool     { return C.asx_f_is_valid(x.bsi) != 0 }
func (x *foreign) NewInstance() *engine.Steps {
	return Wrap(unsafe.Pointer(C.asx_f_new_instance(x.bsi)))
}

// Release frees the foreign root, and the Go callbacks added while it was
// built.
func (x *foreign) Release() {
	C.asx_f_free(x.bsi)
	rootHandles.Lock()
	hs := rootHandles.m[x.bsi]
	delete(rootHandles.m, x.bsi)
	rootHandles.Unlock()
	for _, h := range hs {
		h.Delete()
	}
}

func (x *foreign) Reactor() *reactor.Reactor { return nil }

// callForeign runs a Go callback on a foreign accessor: Error, Break and
// Continue leave it with engine.X.ForeignUnwind(), any other panic fails the
// foreign step with InternalError.
func callForeign(x *foreign, fn func(as *engine.Steps)) {
	as := engine.X.NewForeign(x)
	defer func() {
		if v := recover(); v != nil && v != engine.X.ForeignUnwind() {
			x.Error(engine.InternalError, panicText(v))
		}
	}()
	fn(as)
}

func callbacksOf(data unsafe.Pointer) *goCallbacks {
	return handleOf(data).Value().(*goCallbacks)
}

// handlePtr and handleOf carry a cgo.Handle (an integer, not an address)
// through a void* data argument, by reinterpretation: the collector
// ignores values that are not addresses of Go memory, as a handle is not.
func handlePtr(h cgo.Handle) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&h)) }

func handleOf(p unsafe.Pointer) cgo.Handle { return *(*cgo.Handle)(unsafe.Pointer(&p)) }

//export asxGoForeignExec
func asxGoForeignExec(bsi *C.FutoInAsyncSteps, data unsafe.Pointer, args *C.FutoInArgs) {
	cb := callbacksOf(data)
	if !cb.kept {
		C.asx_f_keep(bsi, data) // deleted with the step
	}
	callForeign(&foreign{bsi: bsi, args: args, inCallback: true}, cb.f)
}

//export asxGoForeignError
func asxGoForeignError(bsi *C.FutoInAsyncSteps, data unsafe.Pointer, code *C.char) {
	cb := callbacksOf(data)
	c := goString(code)
	callForeign(&foreign{bsi: bsi, inCallback: true}, func(as *engine.Steps) { cb.eh(as, c) })
}

//export asxGoForeignCancel
func asxGoForeignCancel(bsi *C.FutoInAsyncSteps, data unsafe.Pointer) {
	cb := callbacksOf(data)
	callForeign(&foreign{bsi: bsi, inCallback: true}, cb.cancel)
}

//export asxGoForeignLoop
func asxGoForeignLoop(bsi *C.FutoInAsyncSteps, data unsafe.Pointer, i C.size_t) {
	cb := callbacksOf(data)
	if cb.rep != nil {
		callForeign(&foreign{bsi: bsi, inCallback: true}, func(as *engine.Steps) { cb.rep(as, int(i)) })
		return
	}
	callForeign(&foreign{bsi: bsi, inCallback: true}, cb.loop)
}

//export asxGoForeignRelease
func asxGoForeignRelease(data unsafe.Pointer) {
	handleOf(data).Delete()
}

//export asxGoObjRelease
func asxGoObjRelease(custom unsafe.Pointer) {
	if custom != nil {
		handleOf(custom).Delete()
	}
}

//export asxGoForeignStateCleanup
func asxGoForeignStateCleanup(data, value unsafe.Pointer) {
	if h := *(*uintptr)(value); h != 0 {
		cgo.Handle(h).Delete()
	}
}
