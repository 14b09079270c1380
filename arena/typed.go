package arena

import (
	"reflect"
	"unsafe"
)

// typedSlab is a chunked free-list pool for one type, like Pool[T] but not
// generic: its type-specific work lives in function fields built once per
// type, so a record can point at the slab directly (no interface boxing, no
// per-type instantiation of Release).
//
// Chunks are ordinary []T made by newChunk, so the garbage collector scans
// them with T's pointer map. Elements are referred to by unsafe.Pointer, not
// uintptr, because they live in the Go heap: the GC must see them both to
// keep the chunk alive and to track pointers it holds.
type typedSlab struct {
	// free holds recycled elements, already zeroed. Invariant:
	// cap(free) >= capN, so put never grows it.
	free []unsafe.Pointer
	// base is the current chunk's first element; elements [next, n) of it
	// have never been handed out and are zero from make. Elements are
	// computed from base and an index so that no pointer ever points past
	// the chunk's end.
	base unsafe.Pointer
	next int
	n    int
	size uintptr

	inUse int
	capN  int

	newChunk func(n int) unsafe.Pointer // make([]T, n), returns &chunk[0]
	zero     func(p unsafe.Pointer)     // *(*T)(p) = zero T, with T's write barriers
}

func newTypedSlab[T any]() *typedSlab {
	size := unsafe.Sizeof(*new(T))
	n := chunkLen(size)
	return &typedSlab{
		next: n, // no current chunk: the first get grows
		n:    n,
		size: size,
		newChunk: func(n int) unsafe.Pointer {
			return unsafe.Pointer(unsafe.SliceData(make([]T, n)))
		},
		zero: func(p unsafe.Pointer) {
			var zero T
			*(*T)(p) = zero
		},
	}
}

// get returns a zeroed element.
func (s *typedSlab) get() unsafe.Pointer {
	if n := len(s.free); n > 0 {
		p := s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
		s.inUse++
		return p
	}
	if s.next < s.n {
		p := unsafe.Add(s.base, uintptr(s.next)*s.size)
		s.next++
		s.inUse++
		return p
	}
	return s.grow()
}

func (s *typedSlab) grow() unsafe.Pointer {
	s.base = s.newChunk(s.n)
	s.next = 1
	s.capN += s.n
	if cap(s.free) < s.capN {
		f := make([]unsafe.Pointer, len(s.free), s.capN)
		copy(f, s.free)
		s.free = f
	}
	s.inUse++
	return s.base
}

// put zeroes the element so the GC retains nothing through it, then
// recycles it.
func (s *typedSlab) put(p unsafe.Pointer) {
	s.zero(p)
	s.free = append(s.free, p)
	s.inUse--
}

// typeInfo is what Alloc needs to know about one type, computed once.
type typeInfo struct {
	size  uintptr
	class int32      // byte-slab class, or -1
	slab  *typedSlab // typed slab when class == -1; nil for zero-sized types
}

// cacheBits sizes the direct-mapped type cache. A step typically touches a
// handful of types; 64 slots keep collisions rare while the whole cache
// stays within a few cache lines' worth of hot entries.
const cacheBits = 6

type cacheEntry struct {
	key  uintptr // type descriptor address; 0 = empty
	info *typeInfo
}

// typeKey returns the address of the runtime type descriptor of *T, which
// identifies T as well as T's own descriptor does. Descriptors of statically
// known types are never freed or moved, so the address is a stable identity
// and a plain integer key is safe.
//
// It reads the type word of an interface holding a nil *T: that is a single
// load from the generic dictionary, where reflect.ValueOf(t).Pointer() on
// reflect.TypeFor[T]() measured about 5 ns more per Alloc. An empty
// interface is {type, data} in every Go release (reflect and the runtime
// both depend on it), and TestTypeKey checks the key against reflect.
func typeKey[T any]() uintptr {
	var x any = (*T)(nil)
	return uintptr((*[2]unsafe.Pointer)(unsafe.Pointer(&x))[0])
}

// cacheIndex spreads descriptor addresses (which share low alignment bits
// and high segment bits) over the cache with a Fibonacci hash.
func cacheIndex(key uintptr) uintptr {
	return uintptr(uint64(key)*0x9E3779B97F4A7C15>>(64-cacheBits)) & (1<<cacheBits - 1)
}

// lookupSlow handles a cache miss: it consults the map, builds the type's
// info on first use, and refills the cache slot. It is generic only because
// building a typed slab needs T.
//
//go:noinline
func lookupSlow[T any](a *Arena, key uintptr) *typeInfo {
	if a.closed {
		panic("arena: Alloc after Close")
	}
	ti := a.types[key]
	if ti == nil {
		ti = newTypeInfo[T](a)
		if a.types == nil {
			a.types = make(map[uintptr]*typeInfo)
		}
		a.types[key] = ti
	}
	a.cache[cacheIndex(key)] = cacheEntry{key: key, info: ti}
	return ti
}

func newTypeInfo[T any](a *Arena) *typeInfo {
	t := reflect.TypeFor[T]()
	ti := &typeInfo{size: t.Size(), class: -1}
	if ti.size == 0 {
		return ti
	}
	if pointerFree(t) {
		if c := classFor(t.Size(), uintptr(t.Align())); c >= 0 {
			ti.class = int32(c)
			return ti
		}
	}
	ti.slab = newTypedSlab[T]()
	a.slabs = append(a.slabs, ti.slab)
	return ti
}

// pointerFree reports whether a value of type t contains no Go pointers at
// any depth, i.e. whether the garbage collector would never need to scan
// it.
func pointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return t.Len() == 0 || pointerFree(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !pointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	default:
		// Pointer, UnsafePointer, String, Slice, Map, Chan, Func, Interface.
		return false
	}
}
