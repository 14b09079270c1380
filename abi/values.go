package abi

/*
#include <string.h>
#include "bridge.h"
*/
import "C"

import (
	"math"
	"runtime/cgo"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
)

// Values cross without their payload being copied: a FutoInBinaryValue and
// an engine.Value are both four words (engine/value.go), and crossing copies
// those words, never the bytes of a string or array.
//
// C to Go (ToValue): the descriptor becomes an engine.BinaryValue that keeps
// the type pointer, the union and custom_data; integers are widened in the
// union so Value.Int reads them, FLOAT is widened to a double and narrowed
// again on the way back. A type with a cleanup makes the Value owned: the
// engine runs the cleanup once, when the value leaves the flow's arguments.
//
// Go to C (setC): Go's own values get the type descriptors of asx_types.
// A Go string or byte slice is pinned (runtime.Pinner) while the C callback
// that receives it runs, which is what makes its address in C memory legal;
// C must copy what it keeps past its callback. A KindObj crosses as a
// CUSTOM_OBJECT whose custom_data is a cgo.Handle, deleted when the callback
// returns.

// ToValue returns the engine.Value of the FutoInBinaryValue at v, without
// copying its payload: a view, valid while the payload is. The value stays
// its owner's: its cleanup is not run by the engine (ownership passes to a
// flow only through the vtable's success).
func ToValue(v unsafe.Pointer) engine.Value {
	if v == nil {
		return engine.Value{}
	}
	return engine.X.Borrowed(fromC((*C.FutoInBinaryValue)(v)))
}

func unionWord(bv *C.FutoInBinaryValue) *uint64 {
	return (*uint64)(unsafe.Pointer(&bv.anon0))
}

func fromC(bv *C.FutoInBinaryValue) engine.Value {
	t := bv._type
	if t == nil {
		return engine.Value{}
	}
	w := *unionWord(bv)
	flags := uint8(t.flags)
	owned := t.cleanup != nil
	var k engine.Kind
	switch flags {
	case C.FTN_TYPE_BOOL:
		k, w = engine.KindBool, w&0xff
		if w != 0 {
			w = 1
		}
	case C.FTN_TYPE_INT8:
		k, w = engine.KindInt, uint64(int64(int8(w)))
	case C.FTN_TYPE_INT16:
		k, w = engine.KindInt, uint64(int64(int16(w)))
	case C.FTN_TYPE_INT32:
		k, w = engine.KindInt, uint64(int64(int32(w)))
	case C.FTN_TYPE_INT64:
		k = engine.KindInt
	case C.FTN_TYPE_UINT8:
		k, w = engine.KindUint, w&0xff
	case C.FTN_TYPE_UINT16:
		k, w = engine.KindUint, w&0xffff
	case C.FTN_TYPE_UINT32:
		k, w = engine.KindUint, w&0xffffffff
	case C.FTN_TYPE_UINT64:
		k = engine.KindUint
	case C.FTN_TYPE_FLOAT:
		k, w = engine.KindFloat, math.Float64bits(float64(math.Float32frombits(uint32(w))))
	case C.FTN_TYPE_DOUBLE:
		k = engine.KindFloat
	case C.FTN_TYPE_STRING:
		k = engine.KindStr
	case C.FTN_TYPE_UINT8 | C.FTN_TYPE_ARRAY, C.FTN_TYPE_INT8 | C.FTN_TYPE_ARRAY:
		k = engine.KindBytes
	case C.FTN_TYPE_CUSTOM_OBJECT:
		if (t == &C.asx_types[C.FTN_TYPE_CUSTOM_OBJECT] || t == &C.asx_goobj_owned) && bv.custom_data != nil {
			// One of ours: a Go value behind a cgo.Handle.
			h := cgo.Handle(uintptr(*(*uint64)(unsafe.Pointer(&bv.custom_data))))
			return engine.Obj(h.Value())
		}
		k = engine.KindBinary
	default:
		k = engine.KindBinary
	}
	return engine.X.BinaryValue(unsafe.Pointer(t), w, bv.custom_data, uint32(bv.length), k, owned)
}

// setC writes v's descriptor into bv (C memory). p pins Go payloads and
// keeps the handles of Go objects until clearArgs.
func setC(bv *C.FutoInBinaryValue, v engine.Value, p *pool) {
	typ, w, custom, n, binary := engine.X.BinaryParts(v)
	if binary {
		t := (*C.FutoInType)(typ)
		if uint8(t.flags) == C.FTN_TYPE_FLOAT {
			w = uint64(math.Float32bits(float32(math.Float64frombits(w))))
		}
		bv._type = t
		*unionWord(bv) = w
		bv.custom_data = custom
		bv.length = C.uint32_t(n)
		return
	}
	var flags int
	switch v.Kind() {
	case engine.KindNone:
		*bv = C.FutoInBinaryValue{}
		return
	case engine.KindInt:
		flags = C.FTN_TYPE_INT64
	case engine.KindUint:
		flags = C.FTN_TYPE_UINT64
	case engine.KindFloat:
		flags = C.FTN_TYPE_DOUBLE
	case engine.KindBool:
		flags = C.FTN_TYPE_BOOL
	case engine.KindStr, engine.KindBytes:
		flags = C.FTN_TYPE_STRING
		if v.Kind() == engine.KindBytes {
			flags = C.FTN_TYPE_UINT8 | C.FTN_TYPE_ARRAY
		}
		if w != 0 && p != nil {
			// Pinning is what lets C memory hold the address of Go memory.
			p.pinner.Pin(*(*unsafe.Pointer)(unsafe.Pointer(&w)))
			p.pinned = true
		}
	case engine.KindObj:
		flags = C.FTN_TYPE_CUSTOM_OBJECT
		h := cgo.NewHandle(v.Obj())
		if p != nil {
			p.handles = append(p.handles, h)
		}
		w = 0
		*(*uint64)(unsafe.Pointer(&bv.custom_data)) = uint64(h)
		bv._type = &C.asx_types[flags]
		*unionWord(bv) = 0
		bv.length = 0
		return
	}
	bv._type = &C.asx_types[flags]
	*unionWord(bv) = w
	bv.custom_data = nil
	bv.length = C.uint32_t(n)
}

// isGoType reports whether t is one of asx_types: a descriptor made in Go.
func isGoType(t unsafe.Pointer) bool {
	base := uintptr(unsafe.Pointer(&C.asx_types[0]))
	p := uintptr(t)
	return p >= base && p < base+unsafe.Sizeof(C.asx_types)
}

// fillArgs writes the step's arguments into the scratch lent to b; it
// returns how many.
func fillArgs(as *engine.Steps, b *C.asx_bsi, p *pool) int {
	a := as.Args()
	n := a.Len()
	in := (*[4]C.FutoInBinaryValue)(unsafe.Pointer(&b.s.in))
	for i := 0; i < n; i++ {
		setC(&in[i], a.At(i), p)
	}
	if n < len(in) && in[n]._type != nil {
		// Left by a callback that a Go panic unwound through: empty it.
		for i := n; i < len(in); i++ {
			in[i] = C.FutoInBinaryValue{}
		}
	}
	return n
}

// clearArgs empties the callback's arguments and lets go of pins and handles.
func clearArgs(b *C.asx_bsi, n int, p *pool) {
	in := (*[4]C.FutoInBinaryValue)(unsafe.Pointer(&b.s.in))
	for i := 0; i < n; i++ {
		in[i] = C.FutoInBinaryValue{}
	}
	if p.pinned {
		p.pinner.Unpin()
		p.pinned = false
	}
	if len(p.handles) > 0 {
		for i, h := range p.handles {
			h.Delete()
			p.handles[i] = 0
		}
		p.handles = p.handles[:0]
	}
}

// argsOf converts what C recorded with success into Values; it returns how
// many (up to the last value with a type).
func argsOf(a *C.FutoInArgs, vals *[engine.MaxArgs]engine.Value) int {
	src := (*[4]C.FutoInBinaryValue)(unsafe.Pointer(a))
	n := 0
	for i := range src {
		if src[i]._type != nil {
			vals[i] = fromC(&src[i])
			n = i + 1
		}
	}
	return n
}

// dropValue is the engine's Bridge.Drop: an owned value left its flow's
// arguments, so its type's cleanup runs (once).
func dropValue(v *engine.Value) {
	typ, w, custom, n, _ := engine.X.BinaryParts(*v)
	t := (*C.FutoInType)(typ)
	if t == nil || t.cleanup == nil {
		return
	}
	var bv C.FutoInBinaryValue
	if uint8(t.flags) == C.FTN_TYPE_FLOAT {
		w = uint64(math.Float32bits(float32(math.Float64frombits(w))))
	}
	bv._type = t
	*unionWord(&bv) = w
	bv.custom_data = custom
	bv.length = C.uint32_t(n)
	C.asx_cleanup(&bv)
}

// The standard codes as C strings, so that an error handler gets one
// without an allocation; goCode maps them back without one either.
var cCodes = map[string]*C.char{}

func init() {
	for _, c := range []string{engine.InternalError, engine.Timeout, engine.DefenseRejected,
		engine.NotImplemented, engine.Canceled, "ConnectError", "CommError", "UnknownInterface",
		"NotSupportedVersion", "Unauthorized", "InvokerError", "InvalidRequest", "PleaseReauth",
		"SecurityError"} {
		cCodes[c] = C.CString(c)
	}
}

// cCode returns code as a C string; free reports whether the caller must
// free it.
func cCode(code string) (s *C.char, free bool) {
	if c, ok := cCodes[code]; ok {
		return c, false
	}
	return C.CString(code), true
}

// goString reads a C string; the standard codes come back without an
// allocation.
func goString(s *C.char) string {
	if s == nil {
		return ""
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(s)), C.strlen(s))
	switch string(b) {
	case engine.InternalError:
		return engine.InternalError
	case engine.Timeout:
		return engine.Timeout
	case engine.DefenseRejected:
		return engine.DefenseRejected
	case engine.Canceled:
		return engine.Canceled
	case engine.NotImplemented:
		return engine.NotImplemented
	}
	return string(b)
}
