package ring

import (
	"math/bits"
	"sync/atomic"
)

// padSize separates fields written by different cores. See "Layout" in the
// package documentation for why it is 128 and not 64.
const padSize = 128

type pad [padSize]byte

// maxCapacity bounds NewMPSC and NewSPSC so that rounding up to a power of
// two cannot overflow int.
const maxCapacity = 1 << (bits.UintSize - 2)

// roundCapacity returns the smallest power of two >= n, and at least 2.
func roundCapacity(n int) int {
	if n <= 2 {
		return 2
	}
	if n > maxCapacity {
		panic("ring: capacity too large")
	}
	return 1 << bits.Len(uint(n-1))
}

// slot pairs a value with the sequence number that says whether it has
// been published; see the MPSC invariants in the package documentation.
type slot[T any] struct {
	seq atomic.Uint64
	val T
}

// MPSC is a bounded multi-producer, single-consumer FIFO queue.
//
// Any goroutine may push; only one goroutine at a time may pop. The zero
// value is not usable: create queues with [NewMPSC], or make one kept in
// place inside another structure with [MPSC.Init]. An MPSC must not be
// copied after first use.
type MPSC[T any] struct {
	_ pad
	// Read-only after construction, shared by every role.
	slots []slot[T]
	mask  uint64
	_     pad
	// enq is the next position to hand to a producer. deqCache is a lower
	// bound of deq kept beside enq, so that producers, who must write this
	// line anyway, rarely need to read the consumer's line.
	enq      atomic.Uint64
	deqCache atomic.Uint64
	_        pad
	// deq is the next position the consumer will pop.
	deq atomic.Uint64
	_   pad
}

// NewMPSC returns an empty queue holding up to capacity items. capacity is
// rounded up to a power of two, and values below 2 become 2. It panics if
// the rounded capacity would not fit in an int.
func NewMPSC[T any](capacity int) *MPSC[T] {
	q := new(MPSC[T])
	q.Init(capacity)
	return q
}

// Init makes q an empty queue holding up to capacity items, as NewMPSC
// does, in place: for a queue kept inside another structure, whose
// consumer then reaches its positions without a pointer to follow. Call it
// before q is used, once.
func (q *MPSC[T]) Init(capacity int) {
	c := roundCapacity(capacity)
	// Every seq starts at 0, which is "not published" for every position
	// because position p is published as p+1 >= 1.
	q.slots = make([]slot[T], c)
	q.mask = uint64(c - 1)
}

// TryPush appends v and reports whether there was room. It never blocks;
// when it returns false the queue is unchanged and v was not taken.
func (q *MPSC[T]) TryPush(v T) bool {
	_, ok := q.TryPushPos(v)
	return ok
}

// TryPushPos is TryPush that also returns the position assigned to v, so
// the caller can later check whether v has been popped with
// pos < q.Consumed(). The first item ever pushed has position 0. pos is
// meaningless when ok is false.
func (q *MPSC[T]) TryPushPos(v T) (pos uint64, ok bool) {
	lap := int64(q.mask + 1)
	for {
		pos = q.enq.Load()
		if pos&closedBit != 0 {
			return 0, false // Close: the CAS below fails too if it comes in between
		}
		// Signed differences: by the time deqCache or deq is loaded, the
		// consumer may already be past a stale pos. A diverted queue's
		// pos carries divertBit, so it reads as a lap and more ahead of
		// deq: full, as Divert says, with no test of its own.
		if int64(pos-q.deqCache.Load()) >= lap {
			// Full by the cached bound; only the consumer's own index can
			// say whether it really is.
			deq := q.deq.Load()
			if int64(pos-deq) >= lap {
				return 0, false
			}
			// Producers may store out of order and move deqCache back;
			// any value once read from deq is still a valid lower bound.
			q.deqCache.Store(deq)
		}
		if q.enq.CompareAndSwap(pos, pos+1) {
			s := &q.slots[pos&q.mask]
			s.val = v
			s.seq.Store(pos + 1)
			return pos, true
		}
		// Another producer took pos; retry at the new enq.
	}
}

// closedBit, set in enq by Close, makes every later TryPushPos fail in the
// same CAS that would claim a position: a producer either claimed its
// position before Close, and Closed's count includes it, or fails.
const closedBit = 1 << 63

// Close makes every later TryPush and TryPushPos fail, and returns how many
// items were ever pushed (or claimed: a producer that claimed its position
// before Close may still be publishing it). The consumer that pops until
// Consumed() reaches that count has taken every item accepted before
// Close, without a counter of producers in flight on the push path. Safe
// from any goroutine; closing again returns the same count.
func (q *MPSC[T]) Close() uint64 {
	return q.enq.Or(closedBit) &^ (closedBit | divertBit)
}

// divertBit, set in enq by Divert and cleared by Undivert, makes the queue
// read as full: the position every reader loads is 2^62 ahead of deq,
// past any lap, so TryPushPos fails, Len clamps to the capacity, and Empty
// and Idle report false, each with no test of its own. Positions are
// below 2^62 (at 10^9 pushes a second, 146 years of them), so the bit
// never meets a position's own; Close's count leaves it out.
const divertBit = 1 << 62

// Divert makes the queue read as full until Undivert: every later TryPush
// and TryPushPos fails, Len reports Cap, Empty and Idle report false.
// Items already pushed stay and pop as usual (TryPop, TryPopBatch and
// Consumed read only the consumer's side); a producer that claimed its
// position before Divert publishes it as usual. It is for an owner that
// sends producers to a list of its own for a while (a reactor's overflow
// list while it is in use) and whose consumer looks at the queue alone to
// know whether it may skip its pass: that one look then covers the list
// too, at no cost to the look. Safe from any goroutine; diverting a
// diverted queue, or undiverting one that is not, changes nothing.
func (q *MPSC[T]) Divert() { q.enq.Or(divertBit) }

// Undivert ends Divert: pushes succeed again while there is room, and Idle
// reports whether the queue is empty and not closed. Safe from any
// goroutine.
func (q *MPSC[T]) Undivert() { q.enq.And(^uint64(divertBit)) }

// TryPop removes and returns the oldest item. It reports false when the
// item at the next position has not been published yet, which includes an
// empty queue; see "Progress" in the package documentation. Only the
// consumer may call it.
func (q *MPSC[T]) TryPop() (T, bool) {
	var zero T
	pos := q.deq.Load()
	s := &q.slots[pos&q.mask]
	if s.seq.Load() != pos+1 {
		return zero, false
	}
	v := s.val
	s.val = zero
	q.deq.Store(pos + 1)
	return v, true
}

// TryPopBatch pops up to len(dst) items into dst, oldest first, and returns
// how many it popped. It stops at the first position that is not yet
// published. It costs one atomic store per call instead of one per item,
// which matters when the consumer is the bottleneck; when producers are
// (the ring keeps running empty) it does not raise throughput, because
// sweeping many slots at once contends more with the producers still
// writing them. Only the consumer may call it.
func (q *MPSC[T]) TryPopBatch(dst []T) int {
	var zero T
	start := q.deq.Load()
	pos := start
	for i := range dst {
		s := &q.slots[pos&q.mask]
		if s.seq.Load() != pos+1 {
			break
		}
		dst[i] = s.val
		s.val = zero
		pos++
	}
	if pos != start {
		q.deq.Store(pos)
	}
	return int(pos - start)
}

// Consumed returns how many items the consumer has popped, which is also
// the position of the next item it will pop: the item pushed at position p
// has been popped if and only if p < Consumed(). It may be called from any
// goroutine; observing Consumed() > p happens after the consumer finished
// popping p.
func (q *MPSC[T]) Consumed() uint64 {
	return q.deq.Load()
}

// Len returns the number of items pushed and not yet popped, counting
// pushes that have claimed a position but not yet published it. Under
// concurrent use it is a snapshot that may already be stale; it is always
// in [0, Cap()]. A diverted queue reads as full: Cap.
func (q *MPSC[T]) Len() int {
	deq := q.deq.Load() // before enq: see invariant 6 in the package doc.
	enq := q.enq.Load() &^ closedBit
	n := enq - deq
	if n > q.mask+1 {
		n = q.mask + 1
	}
	return int(n)
}

// Empty reports whether Len would be 0, with the same two loads and no
// clamp: the consumer's per-iteration check. Read in that order, enq is
// never below deq, so equal means nothing was pushed and not popped. A
// diverted queue reads as full: false.
func (q *MPSC[T]) Empty() bool {
	// deq before enq (invariant 6 in the package doc): the operands'
	// calls run left to right. One statement, so that the look inlined
	// into a caller needs no NOP of its own for the inlining mark.
	return q.deq.Load() == q.enq.Load()&^closedBit
}

// Idle reports whether q is empty, not closed and not diverted: Empty
// without the closed bit's clearing, for a consumer's look that only
// needs to know whether it may skip its pass (a closed queue reads as not
// idle, so the consumer takes its full pass, which finds Close; a diverted
// one reads as full, so that the pass looks at whatever the owner diverted
// producers to).
func (q *MPSC[T]) Idle() bool {
	return q.deq.Load() == q.enq.Load() // deq first, as in Empty
}

// Cap returns the capacity after rounding.
func (q *MPSC[T]) Cap() int {
	return int(q.mask + 1)
}

// Claimed returns how many positions producers have claimed: the items
// ever pushed, counting pushes that have claimed a position and may still
// be publishing it (Close's count, without closing). Safe from any
// goroutine. While the queue is diverted or closed no producer claims one,
// so a consumer that pops until Consumed() reaches it has taken every item
// the queue will hold until Undivert.
func (q *MPSC[T]) Claimed() uint64 {
	return q.enq.Load() &^ (closedBit | divertBit)
}
