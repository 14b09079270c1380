package ring

import "sync/atomic"

// SPSC is a bounded single-producer, single-consumer FIFO queue.
//
// One goroutine at a time may push and one goroutine at a time may pop.
// The zero value is not usable; create queues with [NewSPSC]. An SPSC must
// not be copied after first use.
type SPSC[T any] struct {
	_ pad
	// Read-only after construction, shared by both roles.
	buf  []T
	mask uint64
	_    pad
	// Producer's line: tail is written here and read by the consumer only
	// when its cached copy runs out; headCache is producer-private.
	tail      atomic.Uint64
	headCache uint64
	_         pad
	// Consumer's line, symmetric to the producer's.
	head      atomic.Uint64
	tailCache uint64
	_         pad
}

// NewSPSC returns an empty queue holding up to capacity items. capacity is
// rounded up to a power of two, and values below 2 become 2. It panics if
// the rounded capacity would not fit in an int.
func NewSPSC[T any](capacity int) *SPSC[T] {
	c := roundCapacity(capacity)
	return &SPSC[T]{
		buf:  make([]T, c),
		mask: uint64(c - 1),
	}
}

// TryPush appends v and reports whether there was room. It never blocks;
// when it returns false the queue is unchanged. Only the producer may call
// it.
func (q *SPSC[T]) TryPush(v T) bool {
	t := q.tail.Load()
	if t-q.headCache > q.mask {
		// Looks full with the cached head; only the real head can say.
		q.headCache = q.head.Load()
		if t-q.headCache > q.mask {
			return false
		}
	}
	q.buf[t&q.mask] = v
	q.tail.Store(t + 1)
	return true
}

// TryPop removes and returns the oldest item, or reports false if the
// queue is empty. Only the consumer may call it.
func (q *SPSC[T]) TryPop() (T, bool) {
	var zero T
	h := q.head.Load()
	if h == q.tailCache {
		q.tailCache = q.tail.Load()
		if h == q.tailCache {
			return zero, false
		}
	}
	i := h & q.mask
	v := q.buf[i]
	q.buf[i] = zero
	q.head.Store(h + 1)
	return v, true
}

// TryPopBatch pops up to len(dst) items into dst, oldest first, and returns
// how many it popped. It publishes the consumer position once per call, so
// it costs one atomic store however many items it moves. Only the consumer
// may call it.
func (q *SPSC[T]) TryPopBatch(dst []T) int {
	var zero T
	h := q.head.Load()
	avail := q.tailCache - h
	if avail < uint64(len(dst)) {
		q.tailCache = q.tail.Load()
		avail = q.tailCache - h
	}
	n := min(avail, uint64(len(dst)))
	for i := range n {
		j := (h + i) & q.mask
		dst[i] = q.buf[j]
		q.buf[j] = zero
	}
	if n > 0 {
		q.head.Store(h + n)
	}
	return int(n)
}

// Len returns the number of items in the queue. Under concurrent use it is
// a snapshot that may already be stale; it is always in [0, Cap()].
func (q *SPSC[T]) Len() int {
	head := q.head.Load() // before tail, so that tail >= head.
	tail := q.tail.Load()
	n := tail - head
	if n > q.mask+1 {
		n = q.mask + 1
	}
	return int(n)
}

// Cap returns the capacity after rounding.
func (q *SPSC[T]) Cap() int {
	return int(q.mask + 1)
}
