// Package ring provides bounded, lock-free, allocation-free queues for
// handing work to a reactor goroutine.
//
// Two queues are provided:
//
//   - [MPSC]: any number of goroutines may call TryPush, TryPushPos, Len,
//     Cap, Consumed, Claimed, Divert and Undivert concurrently; exactly
//     one goroutine at a time (the consumer) may call TryPop and
//     TryPopBatch.
//   - [SPSC]: one goroutine at a time may call TryPush (the producer) and
//     one goroutine at a time may call TryPop and TryPopBatch (the
//     consumer); Len and Cap may be called from anywhere.
//
// "One goroutine at a time" means the calls of that role must be ordered
// by happens-before (for example by running on one goroutine, or by
// handing the role over through a mutex or channel). Breaking this is a
// data race; the queues do not detect it.
//
// # Capacity and full rings
//
// Capacities are rounded up to a power of two, with a minimum of 2, so a
// position maps to a slot with a mask instead of a division. A one-slot
// ring would make every push wait for the previous pop, which defeats the
// purpose of a queue.
//
// Neither queue ever blocks and neither ever drops an item: a push into a
// full ring returns false and leaves the ring unchanged, and the caller
// decides whether to retry, back off, or shed load. A pop from an empty
// ring returns false and the zero value.
//
// A popped slot is overwritten with the zero value of T before it is
// released, so a ring never keeps pointers reachable after the consumer
// has taken them. Slots are ordinary typed Go memory; T may contain
// pointers and the garbage collector sees them.
//
// # Positions
//
// Every successful MPSC push is assigned a position: the first item ever
// pushed has position 0, the next 1, and so on, in the order in which
// producers claimed their slots. The consumer pops strictly in position
// order, so [MPSC.Consumed] (the number of items popped so far, which is
// also the position of the next item to be popped) answers "has the item
// at position p been taken?" with the test p < Consumed(). Positions are
// uint64 and do not wrap in practice (at 10^9 pushes per second the counter
// lasts more than 500 years).
//
// # Progress
//
// Producers of an MPSC are lock-free with respect to each other: a failed
// CAS on the enqueue position means another producer succeeded. The
// consumer is not fully independent of them, however. A producer claims a
// position (CAS) and then publishes it (a store) a few instructions later;
// if it is descheduled in between, the consumer cannot pop that position
// or any later one until it resumes, even though later items may already
// be published. During that window TryPop reports false while Len may be
// positive, and if the ring laps around to the stalled slot, producers see
// it as full. A reactor must therefore treat TryPop == false as "nothing
// poppable right now", not as proof that no work has been submitted.
//
// The SPSC queue is wait-free: every operation finishes in a bounded
// number of steps.
//
// # Memory ordering
//
// All ordering comes from one rule of the Go memory model: if an atomic
// operation B observes the effect of an atomic operation A, then A is
// synchronized before B, and so everything sequenced before A happens
// before everything sequenced after B. There are no locks and no other
// fences. The race detector understands sync/atomic, so the arguments
// below are what `go test -race` checks.
//
// MPSC. Producers claim positions and publish slots as in Dmitry Vyukov's
// bounded MPMC queue; the one consumer lets us replace Vyukov's per-slot
// "released" sequence value with the consumer's index. The queue has an
// enqueue position enq (advanced by producers with CAS), a dequeue
// position deq (written only by the consumer), a lower bound deqCache of
// deq (written by producers), and per slot a sequence number seq and a
// value val. Let C be the capacity; position p uses slot p&(C-1). A slot's
// seq is the last position published into it plus one, so the consumer
// at position p may take the slot exactly when seq == p+1 (every seq
// starts at 0, and a slot's previous lap leaves seq == p-C+1).
//
// Invariants:
//
//  1. A producer writes val for position p only after it won the CAS
//     enq: p -> p+1. The CAS hands out each position exactly once, so at
//     most one producer writes a slot per lap.
//  2. Before that CAS the producer established p - d < C for some d it
//     loaded from deq, directly or through deqCache (which only ever holds
//     values loaded from deq). Loading d from deq observes the consumer's
//     store of d; loading it from deqCache observes the store of the
//     producer that copied it there after loading it from deq, which
//     extends the same chain. d > p-C, so the consumer had finished
//     reading and clearing the slot for position p-C before the producer
//     writes it: an item is never overwritten before it is taken.
//  3. The producer publishes with seq.Store(p+1), sequenced after its write
//     of val.
//  4. The consumer reads val for position p only after seq.Load() returned
//     p+1. That load observes the store in (3), so the write of val happens
//     before the read: the consumer never sees a partial or stale item.
//  5. The consumer clears val and then stores deq (once per TryPop, once
//     per TryPopBatch). This store is the only edge from the consumer back
//     to producers, which is what (2) relies on; it also means a goroutine
//     that observes Consumed() > p (an atomic load of deq) observes the
//     consumer's work on position p as done.
//  6. enq and deq only grow and deq <= enq at every instant (enq's
//     position: Close sets bit 63 of the word, which readers mask off
//     but for TryPushPos and Idle; Divert sets bit 62, which no reader
//     masks but Close's count, so that the queue reads as full). Len loads deq
//     before enq, so the difference it computes is never negative; it is
//     clamped to C because the two loads are not a single snapshot. A
//     producer compares its possibly stale p with deq using a signed
//     difference, because the consumer may already be past p.
//
// Compared with Vyukov's original, where the consumer also stores seq =
// p+C into each slot to release it, the consumer here does no atomic store
// per item when it pops in batches (atomic stores are full fences, XCHG on
// amd64), and producers read the consumer's line only about once per lap
// (when deqCache looks a full lap behind) instead of reading each slot
// before claiming it; streaming one item at a time from one core to
// another, that measured about 1.6 times the original's throughput. The
// price is that a producer's capacity check and its claim are two steps,
// so the check uses a bound that may be stale; staleness can only make the
// ring look fuller, and a producer re-reads deq before it reports full.
//
// SPSC. The same slot protocol without the CAS: the single producer owns
// tail, and keeps headCache, a private copy of the consumer's head.
//
//  1. The producer writes val for position t only when t - h < C for some
//     h it loaded from head (headCache only ever holds such values). That
//     load observes the consumer's store of h, and h > t-C, so the
//     consumer had finished with the slot's previous lap.
//  2. The producer stores tail = t+1, writes val, then publishes with
//     seq.Store(t+1).
//  3. The consumer reads val for position h only after seq.Load() returned
//     h+1, which observes the store in (2).
//  4. The consumer clears val and then stores head (once per TryPop, once
//     per TryPopBatch); this is the edge (1) relies on.
//  5. Because tail is stored before the slot is published, head <= tail
//     at every instant; Len loads head before tail, so its difference is
//     never negative.
//
// headCache is a lower bound of head, since head only grows: a stale copy
// can only make the ring look fuller, and the producer reloads head before
// it reports full, so in the common case a push touches no line the
// consumer writes except the slot itself. The consumer needs no copy of
// tail at all. A Lamport ring with a cached tail on the consumer side
// measured half this one's throughput or less when streaming from one
// core to another: a consumer that has caught up polls tail, and every
// poll takes the line away from the producer, which stores tail on every
// push; here a poll reads only the slot line the producer writes next
// anyway.
//
// # Layout
//
// The fields written by different roles (enq and deqCache by producers, deq
// by the consumer; tail and head in SPSC) sit on separate 128-byte blocks,
// as do the read-only fields. 128 bytes rather than 64 because Intel cores
// prefetch cache lines in adjacent pairs, and 128 is the line size on some
// arm64 parts; the few hundred bytes per queue are cheap compared with a
// contended line between the producers and the reactor.
package ring
