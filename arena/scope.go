package arena

import (
	"errors"
	"fmt"
	"unsafe"
)

// Scope records the allocations owned by one step so they are all freed
// together when the step is destroyed.
//
// It is a single word meant to be embedded in the owner (the step frame);
// the zero Scope is empty. A Scope must be released to the Arena that
// allocated into it, and must not be copied while it owns allocations: the
// copy and the original would both release the same memory.
type Scope struct {
	// head is the most recent allocation. Records are pushed at the head,
	// so walking the list frees in reverse order of allocation.
	head *record
}

// Empty reports whether s owns no allocations.
func (s *Scope) Empty() bool { return s.head == nil }

// record is the bookkeeping for one allocation. Records come from the
// Arena's Pool[record], so they are typed, GC-visible memory: next and slab
// are ordinary pointers, and ptr is an unsafe.Pointer (never a uintptr)
// because for typed slabs it points into the Go heap.
type record struct {
	next  *record
	ptr   unsafe.Pointer
	slab  *typedSlab // nil for byte-slab memory
	class int32      // byte-slab class when slab == nil
	size  uint32     // bytes to zero on release (byte-slab memory only)
}

// Arena hands out step-lifetime memory from byte slabs (pointer-free types)
// and typed slabs (types holding Go pointers). Create it with New; an Arena
// is not safe for concurrent use.
type Arena struct {
	// cache is the direct-mapped front of types; a hit avoids the map.
	cache [1 << cacheBits]cacheEntry
	// classes are the byte-slab size classes, indexed by class number.
	classes [NumClasses]byteClass
	// recs supplies one record per live allocation, so its InUse is the
	// number of live allocations.
	recs Pool[record]

	types  map[uintptr]*typeInfo // every type seen, keyed by typeKey
	slabs  []*typedSlab          // every typed slab, for Stats
	mapped [][]byte              // every mmap'ed slab, for Close and Trim
	// mappedClass is the size class of each slab in mapped (Trim).
	mappedClass []int8
	closed      bool
}

// New returns an empty Arena. It maps no memory until the first Alloc.
func New() *Arena {
	a := &Arena{}
	a.reset()
	return a
}

func (a *Arena) reset() {
	for c := range a.classes {
		a.classes[c] = byteClass{size: classSize(c)}
	}
}

// Alloc returns zeroed memory for one T owned by s. The pointer is valid
// until s is released; after that the memory is zeroed and reused by later
// allocations, or returned to the OS by Trim, so the caller must not keep
// it.
//
// A pointer-free T of at most MaxClassSize bytes comes from mmap'ed byte
// slabs that the garbage collector never scans; any other T comes from a
// typed slab that it does. The first Alloc of each type inspects it with
// reflect; later ones allocate nothing once the slabs are warm.
func Alloc[T any](a *Arena, s *Scope) *T {
	key := typeKey[T]()
	e := &a.cache[cacheIndex(key)]
	ti := e.info
	if e.key != key {
		ti = lookupSlow[T](a, key)
	}
	var r *record
	if ti.class >= 0 {
		r = a.recs.Get()
		r.ptr = a.allocBytes(int(ti.class))
		r.class = ti.class
		r.size = uint32(ti.size)
	} else if ti.slab != nil {
		r = a.recs.Get()
		r.ptr = ti.slab.get()
		r.slab = ti.slab
	} else {
		// Zero-sized: new returns the runtime's shared zero-size address
		// without allocating, and there is nothing to free.
		return new(T)
	}
	r.next = s.head
	s.head = r
	return (*T)(r.ptr)
}

// Release frees everything s owns, in reverse order of allocation, zeroing
// each allocation first, and leaves s empty. It runs in time proportional
// to the number of allocations. Every pointer obtained from Alloc with s
// becomes invalid.
func (a *Arena) Release(s *Scope) {
	r := s.head
	s.head = nil
	for r != nil {
		next := r.next
		if r.slab != nil {
			r.slab.put(r.ptr)
		} else {
			a.freeBytes(int(r.class), uintptr(r.size), r.ptr)
		}
		a.recs.Put(r)
		r = next
	}
}

// ClassStats describes one byte-slab size class.
type ClassStats struct {
	Size   int // block size in bytes
	InUse  int // blocks handed out and not released
	Carved int // blocks ever taken from slabs (in use or on the free list)
	Slabs  int // slabs mapped for this class
}

// Stats is a snapshot of an Arena's occupancy.
type Stats struct {
	ObjectsInUse int // live allocations of all kinds (zero-sized ones excepted)
	BytesInUse   int // bytes of byte-slab blocks in use, rounded up to their class size
	TypedInUse   int // live allocations from typed slabs
	TypedCap     int // elements allocated in typed-slab chunks
	SlabBytes    int // bytes mapped for byte slabs
	Types        int // distinct types allocated so far
	Records      int // bookkeeping records allocated (in use or free)

	Classes [NumClasses]ClassStats
}

// Stats returns the Arena's current occupancy. It does not allocate.
func (a *Arena) Stats() Stats {
	st := Stats{
		ObjectsInUse: a.recs.InUse(),
		SlabBytes:    len(a.mapped) * SlabSize,
		Types:        len(a.types),
		Records:      a.recs.Cap(),
	}
	for c := range a.classes {
		bc := &a.classes[c]
		st.Classes[c] = ClassStats{Size: int(bc.size), InUse: bc.inUse, Carved: bc.carved, Slabs: bc.slabs}
		st.BytesInUse += bc.inUse * int(bc.size)
	}
	for _, s := range a.slabs {
		st.TypedInUse += s.inUse
		st.TypedCap += s.capN
	}
	return st
}

// ErrInUse is returned by Close when some scope still owns allocations.
var ErrInUse = errors.New("arena: Close with allocations in use")

// Close unmaps every byte slab and drops every typed slab. It refuses, with
// an error wrapping ErrInUse and leaving the Arena untouched, while any
// scope still owns allocations, because unmapping would turn their pointers
// into faults. After a successful Close, Alloc panics; Release of an empty
// scope, Stats and Close remain harmless.
func (a *Arena) Close() error {
	if a.closed {
		return nil
	}
	if n := a.recs.InUse(); n > 0 {
		return fmt.Errorf("%w: %d allocations", ErrInUse, n)
	}
	var err error
	for i, s := range a.mapped {
		if e := unmapSlab(s); e != nil && err == nil {
			err = fmt.Errorf("arena: unmapping slab: %w", e)
		}
		a.mapped[i] = nil
	}
	*a = Arena{closed: true}
	a.reset()
	return err
}
