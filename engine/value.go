package engine

import (
	"math"
	"strconv"
	"unsafe"
)

// Kind is the type of the payload a Value carries.
type Kind uint8

// The kinds a Value can hold. KindNone is the zero Value.
const (
	KindNone Kind = iota
	KindInt
	KindUint
	KindFloat
	KindBool
	KindStr
	KindBytes
	KindObj
)

// kindNames is indexed by Kind: KindBinary (binary.go) included.
var kindNames = [...]string{"None", "Int", "Uint", "Float", "Bool", "Str", "Bytes", "Obj", "Binary"}

// String returns the kind's name, as in "Int"; a number that is no kind
// prints as "Kind(9)".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one success argument passed between steps. Build one with Int,
// Uint, Float, Bool, Str, Bytes or Obj; the zero Value is KindNone.
//
// Scalars, strings and byte slices are carried without heap allocation: a
// Value is 32 bytes, laid out like FTN12 2.7's FutoInBinaryValue so that an
// Args (four Values) has the shape of FutoInArgs:
//
//	offset  0  typ    FutoInBinaryValue.type: the ABI layer's; a KindObj's interface type word
//	offset  8  word   the union: integer/float/bool bits, or a data address
//	offset 16  ref    custom_data: the Go pointer that keeps data alive
//	offset 24  meta   bits 0-31: length (bytes of a Str or Bytes), C's length;
//	                  bits 32-39: Kind; bit 40: big (C's padding)
//
// Invariant: for KindStr and KindBytes, word == uintptr(ref); ref is what the
// garbage collector sees, word is what C sees. For KindObj, typ and ref are
// the interface's type and data words, both visible to the GC.
//
// Value has exactly four word-sized fields on purpose: the compiler keeps a
// struct of at most four fields in registers (SSA), so building, passing and
// reading a Value costs no memory copies; with more fields every Value went
// through the stack and stalled on store forwarding (measured: ~40% of a step).
type Value struct {
	typ  unsafe.Pointer
	word uint64
	ref  unsafe.Pointer
	meta uint64
}

const (
	metaKindShift = 32
	metaBig       = 1 << 40
)

func mkMeta(k Kind, n uint32) uint64 { return uint64(n) | uint64(k)<<metaKindShift }

func (v Value) n() uint32 { return uint32(v.meta) }
func (v Value) big() bool { return v.meta&metaBig != 0 }

// eface is the runtime layout of an empty interface.
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// Int returns a Value holding a signed integer.
func Int(v int64) Value { return Value{word: uint64(v), meta: mkMeta(KindInt, 0)} }

// Uint returns a Value holding an unsigned integer.
func Uint(v uint64) Value { return Value{word: v, meta: mkMeta(KindUint, 0)} }

// Float returns a Value holding a float64.
func Float(v float64) Value { return Value{word: math.Float64bits(v), meta: mkMeta(KindFloat, 0)} }

// Bool returns a Value holding a boolean.
func Bool(v bool) Value {
	var w uint64
	if v {
		w = 1
	}
	return Value{word: w, meta: mkMeta(KindBool, 0)}
}

// Str returns a Value holding a string. The string's bytes are shared, not copied.
func Str(v string) Value {
	if uint64(len(v)) > math.MaxUint32 {
		// A header of its own, allocated only here: taking &v would move
		// every call's parameter to the heap.
		h := new(string)
		*h = v
		return Value{ref: unsafe.Pointer(h), meta: mkMeta(KindStr, 0) | metaBig}
	}
	p := unsafe.Pointer(unsafe.StringData(v))
	return Value{word: uint64(uintptr(p)), ref: p, meta: mkMeta(KindStr, uint32(len(v)))}
}

// Bytes returns a Value holding a byte slice. The slice is shared, not copied;
// its capacity is not kept.
func Bytes(v []byte) Value {
	if uint64(len(v)) > math.MaxUint32 {
		h := new([]byte) // as in Str: only this branch allocates
		*h = v
		return Value{ref: unsafe.Pointer(h), meta: mkMeta(KindBytes, 0) | metaBig}
	}
	p := unsafe.Pointer(unsafe.SliceData(v))
	return Value{word: uint64(uintptr(p)), ref: p, meta: mkMeta(KindBytes, uint32(len(v)))}
}

// Obj returns a Value holding any Go value. A nil v gives a KindObj Value
// whose Obj() is nil. Converting v to any may allocate; the Value itself
// does not.
func Obj(v any) Value {
	e := (*eface)(unsafe.Pointer(&v))
	return Value{typ: e.typ, ref: e.data, meta: mkMeta(KindObj, 0)}
}

// Kind reports what the Value holds.
func (v Value) Kind() Kind { return Kind(v.meta >> metaKindShift) }

// Int returns the integer of a KindInt or KindUint Value, the truncated
// number of a KindFloat, 0 or 1 for KindBool, and 0 otherwise.
func (v Value) Int() int64 {
	switch v.Kind() {
	case KindInt, KindUint, KindBool:
		return int64(v.word)
	case KindFloat:
		return int64(math.Float64frombits(v.word))
	}
	return 0
}

// Uint returns the Value as an unsigned integer, converting as Int does.
func (v Value) Uint() uint64 {
	switch v.Kind() {
	case KindInt, KindUint, KindBool:
		return v.word
	case KindFloat:
		return uint64(math.Float64frombits(v.word))
	}
	return 0
}

// Float returns the Value as a float64: the number of a KindFloat, the
// converted integer of a KindInt or KindUint, and 0 otherwise.
func (v Value) Float() float64 {
	switch v.Kind() {
	case KindFloat:
		return math.Float64frombits(v.word)
	case KindInt:
		return float64(int64(v.word))
	case KindUint:
		return float64(v.word)
	}
	return 0
}

// Bool returns true for a KindBool true and for a non-zero number.
func (v Value) Bool() bool {
	switch v.Kind() {
	case KindBool, KindInt, KindUint:
		return v.word != 0
	case KindFloat:
		return math.Float64frombits(v.word) != 0
	}
	return false
}

// Str returns the string of a KindStr Value, the bytes of a KindBytes Value
// as a string (shared, not copied: do not change the slice after), the
// string of a KindObj holding a string, and "" otherwise.
func (v Value) Str() string {
	switch v.Kind() {
	case KindStr, KindBytes:
		if v.meta&(metaBig|metaBinary) != 0 {
			b := v.slowBytes()
			return unsafe.String(unsafe.SliceData(b), len(b))
		}
		return unsafe.String((*byte)(v.ref), int(v.n()))
	case KindObj:
		s, _ := v.Obj().(string)
		return s
	}
	return ""
}

// Bytes returns the slice of a KindBytes Value, the bytes of a KindStr Value
// (shared, read-only: never write to them), the slice of a KindObj holding
// a []byte, and nil otherwise.
func (v Value) Bytes() []byte {
	switch v.Kind() {
	case KindStr, KindBytes:
		if v.meta&(metaBig|metaBinary) != 0 {
			return v.slowBytes()
		}
		if v.ref == nil {
			return nil
		}
		return unsafe.Slice((*byte)(v.ref), int(v.n()))
	case KindObj:
		b, _ := v.Obj().([]byte)
		return b
	}
	return nil
}

// slowBytes returns the payload of a Str or Bytes over 4 GiB (held behind
// ref) or of a binary one (its data address is word: see BinaryValue).
func (v Value) slowBytes() []byte {
	if v.meta&metaBinary != 0 {
		p := *(*unsafe.Pointer)(unsafe.Pointer(&v.word))
		if p == nil {
			return nil
		}
		return unsafe.Slice((*byte)(p), int(v.n()))
	}
	if v.Kind() == KindBytes {
		return *(*[]byte)(v.ref)
	}
	s := *(*string)(v.ref)
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// Obj returns the Go value of a KindObj Value; for the other kinds it
// returns the payload as its natural Go type (int64, uint64, float64, bool,
// string, []byte), which allocates, or nil for KindNone.
func (v Value) Obj() any {
	switch v.Kind() {
	case KindObj:
		var r any
		e := (*eface)(unsafe.Pointer(&r))
		e.typ = v.typ
		e.data = v.ref
		return r
	case KindInt:
		return v.Int()
	case KindUint:
		return v.Uint()
	case KindFloat:
		return v.Float()
	case KindBool:
		return v.Bool()
	case KindStr:
		return v.Str()
	case KindBytes:
		return v.Bytes()
	}
	return nil
}

// MaxArgs is how many Values one success may carry, as FutoInArgs holds.
const MaxArgs = 4

// Args is the list of Values a step succeeded with: at most four, laid out
// as FTN12 2.7's FutoInArgs. Its length is the position of the last Value
// that is not KindNone, so an explicit trailing zero Value is not counted.
//
// The *Args a step gets from Steps.Args is valid until that step ends; copy
// the Values out to keep them.
type Args struct {
	v [MaxArgs]Value
}

// Len returns the number of Values; 0 for a nil *Args (what Promise.Wait
// returns for a flow that failed).
func (a *Args) Len() int {
	if a == nil {
		return 0 // Promise.Wait's result for a failed flow
	}
	for i := MaxArgs - 1; i >= 0; i-- {
		if a.v[i].meta != 0 {
			return i + 1
		}
	}
	return 0
}

// At (nil-safe, like Len) returns Value i, or the zero Value when i is out of range.
func (a *Args) At(i int) Value {
	if a == nil || uint(i) >= MaxArgs {
		return Value{}
	}
	return a.v[i]
}

// set replaces the contents with vals; len(vals) <= MaxArgs is checked by
// the caller. Only the slots in use are written: the common one-value
// success copies 32 bytes, not 128. The slots past vals are cleared only
// when one of them is set (a zero meta is the zero Value): their metas are
// OR'ed into one branch, where a loop over them cost a load and a branch
// each (and finding the old length first, Len's scan, a sixth of a step).
// Each length is written out: a loop over vals cost a bounds check and a
// write-barrier test per Value and 76 instructions for two Values, the
// straight copy 30 (profiles/notes/README.md, Hsimple).
func (a *Args) set(vals []Value) {
	switch len(vals) {
	case 0:
		a.reset()
	case 1:
		a.set1(vals[0])
	case 2:
		a.set2(vals[0], vals[1])
	case 3:
		_ = vals[2]
		a.v[0], a.v[1], a.v[2] = vals[0], vals[1], vals[2]
		if a.v[3].meta != 0 {
			a.v[3] = Value{}
		}
	default:
		_ = vals[3]
		a.v[0], a.v[1], a.v[2], a.v[3] = vals[0], vals[1], vals[2], vals[3]
	}
}

// set1 is set for one value, small enough to inline into Success: a
// step's usual outcome.
func (a *Args) set1(v Value) {
	a.v[0] = v
	if a.v[1].meta|a.v[2].meta|a.v[3].meta != 0 {
		a.v[1], a.v[2], a.v[3] = Value{}, Value{}, Value{}
	}
}

// set2 is set for two values, inlined into Success like set1.
func (a *Args) set2(v0, v1 Value) {
	a.v[0], a.v[1] = v0, v1
	if a.v[2].meta|a.v[3].meta != 0 {
		a.v[2], a.v[3] = Value{}, Value{}
	}
}

// empty reports whether a holds no values: the test reset starts with.
func (a *Args) empty() bool {
	return a.v[0].meta|a.v[1].meta|a.v[2].meta|a.v[3].meta == 0
}

func (a *Args) reset() {
	// Most resets find no values: four loads and no branch per slot.
	if a.v[0].meta|a.v[1].meta|a.v[2].meta|a.v[3].meta == 0 {
		return
	}
	// One block clear (one write-barrier test) rather than Len's scan and
	// a store per slot: slots past Len are zero already, so the result is
	// the same.
	*a = Args{}
}
