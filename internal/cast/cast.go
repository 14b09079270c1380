// Package cast holds the reinterpretations of memory that the packages
// above it need and that Go has no safe spelling for: a func value as the
// pointer it is, a func value as another func type with the same machine
// signature, the entry PC of a func value, and a string's bytes. Keeping
// them here, each with the sentence that makes it safe, leaves the packages
// that use them (reactor, engine, netio) free of unsafe arithmetic of their
// own; cast_test.go pins what each one does.
package cast

import "unsafe"

// FuncPtr returns the pointer a func value is: the address of its closure
// record, whose first word is the entry PC (nil for a nil func). F must be a
// func type. Safe because a func value is, in every Go ABI, a single
// pointer-shaped word the garbage collector traces; the pointer keeps the
// closure alive as long as it is held.
func FuncPtr[F any](f F) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&f)) }

// Func turns a pointer made by FuncPtr back into a func value of type F.
// F must have the same machine signature as the func the pointer came
// from: the same parameters and results, where any pointer type may stand
// for any other (a *T and an unsafe.Pointer are both one pointer, passed the
// same way by every Go ABI, so the call is the same machine call).
func Func[F any](p unsafe.Pointer) F { return *(*F)(unsafe.Pointer(&p)) }

// FuncPC returns the entry PC of the func value whose FuncPtr is p, as
// reflect.ValueOf(f).Pointer() would, without reflect; 0 for nil. Safe
// because the first word of a closure record is its entry PC (the
// runtime's funcval layout, stable since Go 1.1).
func FuncPC(p unsafe.Pointer) uintptr {
	if p == nil {
		return 0
	}
	return *(*uintptr)(p)
}

// PCOf is FuncPC(FuncPtr(f)).
func PCOf[F any](f F) uintptr { return FuncPC(FuncPtr(f)) }

// StringBytes returns the bytes of s without copying them. The caller must
// not write to the slice: the bytes of a string may live in read-only
// memory. Safe for reading because the slice points at the string's own
// bytes, which stay alive (and unchanged) as long as the slice does.
func StringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
