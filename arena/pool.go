package arena

import "unsafe"

// defaultChunkBytes sizes chunks when the caller does not: large enough that
// growth is rare, small enough that an idle pool does not pin much memory.
const defaultChunkBytes = 16 << 10

// chunkLen returns how many elements of the given size make up a default
// chunk. Zero-sized elements get a fixed count because they cost nothing.
func chunkLen(size uintptr) int {
	if size == 0 {
		return 1024
	}
	n := defaultChunkBytes / size
	if n < 1 {
		n = 1
	}
	return int(n)
}

// Pool is a typed free-list pool of fixed-type objects owned by one
// goroutine (the arena's allocation records are kept in one).
//
// Memory is carved from chunks of []T, which are ordinary GC-visible typed
// memory, so T may hold Go pointers. Unlike sync.Pool, elements are never
// dropped by the garbage collector and Get never allocates unless every
// chunk is in use. A chunk is kept alive only by the elements carved from
// it (held by callers or on the free list), so Cap counts every element
// ever carved, not what is still reachable.
//
// The zero Pool is ready to use with the default chunk size. A Pool is not
// safe for concurrent use; see the package documentation.
type Pool[T any] struct {
	// free holds recycled elements, already zeroed, used as a stack so the
	// most recently freed (cache-hot) element is reused first. Invariant:
	// cap(free) >= capN, so Put of an element that came from this pool
	// never grows the slice.
	free []*T
	// chunk is the current chunk; chunk[next:] has never been handed out
	// and is still zero from make.
	chunk []T
	next  int
	// n is the number of elements per chunk; 0 means the default.
	n     int
	inUse int
	capN  int
}

// NewPool returns a Pool that allocates chunk elements at a time. A chunk
// of 0 or less picks a default of about 16 KiB per chunk.
func NewPool[T any](chunk int) *Pool[T] {
	if chunk < 0 {
		chunk = 0
	}
	return &Pool[T]{n: chunk}
}

// Get returns a zeroed element. It allocates only when the free list is
// empty and the current chunk is used up.
func (p *Pool[T]) Get() *T {
	if n := len(p.free); n > 0 {
		x := p.free[n-1]
		// Clearing the slot lets a chunk whose elements were all leaked be
		// collected instead of being pinned by a stale stack entry.
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.inUse++
		return x
	}
	if p.next < len(p.chunk) {
		x := &p.chunk[p.next]
		p.next++
		p.inUse++
		return x
	}
	return p.grow()
}

// grow is kept out of Get so that Get stays small enough to inline.
func (p *Pool[T]) grow() *T {
	n := p.n
	if n <= 0 {
		n = chunkLen(unsafe.Sizeof(*new(T)))
	}
	p.chunk = make([]T, n)
	p.next = 1
	p.capN += n
	if cap(p.free) < p.capN {
		f := make([]*T, len(p.free), p.capN)
		copy(f, p.free)
		p.free = f
	}
	p.inUse++
	return &p.chunk[0]
}

// Put zeroes *x, so that the pool retains nothing the garbage collector
// would have to keep alive, and makes x available to Get. x must have come
// from Get on this pool and must not be used after Put; putting the same
// element twice hands it out twice. Put(nil) does nothing.
func (p *Pool[T]) Put(x *T) {
	if x == nil {
		return
	}
	var zero T
	*x = zero
	p.free = append(p.free, x)
	p.inUse--
}

// InUse reports the number of elements handed out and not yet returned
// (Gets minus Puts).
func (p *Pool[T]) InUse() int { return p.inUse }

// Cap reports the number of elements allocated in chunks so far.
func (p *Pool[T]) Cap() int { return p.capN }
