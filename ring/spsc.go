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
	slots []slot[T]
	mask  uint64
	_     pad
	// Producer's line. tail is read by other goroutines only in Len;
	// headCache is producer-private.
	tail      atomic.Uint64
	headCache uint64
	_         pad
	// Consumer's line. The consumer needs no copy of tail: a slot's own
	// sequence number says whether it has been published.
	head atomic.Uint64
	_    pad
}

// NewSPSC returns an empty queue holding up to capacity items. capacity is
// rounded up to a power of two, and values below 2 become 2. It panics if
// the rounded capacity would not fit in an int.
func NewSPSC[T any](capacity int) *SPSC[T] {
	c := roundCapacity(capacity)
	return &SPSC[T]{
		slots: make([]slot[T], c),
		mask:  uint64(c - 1),
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
	// tail before publishing, so that head <= tail at every instant and
	// Len never sees the consumer ahead of the producer.
	q.tail.Store(t + 1)
	s := &q.slots[t&q.mask]
	s.val = v
	s.seq.Store(t + 1)
	return true
}

// TryPop removes and returns the oldest item, or reports false if the
// queue is empty. Only the consumer may call it.
func (q *SPSC[T]) TryPop() (T, bool) {
	var zero T
	h := q.head.Load()
	s := &q.slots[h&q.mask]
	if s.seq.Load() != h+1 {
		return zero, false
	}
	v := s.val
	s.val = zero
	q.head.Store(h + 1)
	return v, true
}

// TryPopBatch pops up to len(dst) items into dst, oldest first, and returns
// how many it popped. It publishes the consumer position once per call, so
// it costs one atomic store however many items it moves; see
// [MPSC.TryPopBatch] for when that helps. Only the consumer may call it.
func (q *SPSC[T]) TryPopBatch(dst []T) int {
	var zero T
	start := q.head.Load()
	h := start
	for i := range dst {
		s := &q.slots[h&q.mask]
		if s.seq.Load() != h+1 {
			break
		}
		dst[i] = s.val
		s.val = zero
		h++
	}
	if h != start {
		q.head.Store(h)
	}
	return int(h - start)
}

// Len returns the number of items in the queue, counting a push that is
// in progress. Under concurrent use it is a snapshot that may already be
// stale; it is always in [0, Cap()].
func (q *SPSC[T]) Len() int {
	head := q.head.Load() // before tail: see SPSC invariant 5 in the package doc.
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
