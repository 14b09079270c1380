// Package timerwheel is a hierarchical timing wheel that schedules callbacks
// at integer ticks, built for a single reactor goroutine whose timers are
// almost always canceled before they expire (step timeouts). Add and Cancel
// are O(1) and allocation-free once the node pool is warm; Poll and
// NextDeadline cost O(1) when nothing is due, however far time jumps.
//
// # Ticks
//
// Time is a uint64 tick count whose unit the caller chooses (nanoseconds,
// microseconds, milliseconds). The wheel never reads a clock: it only learns
// the time from the argument of [New] and [Wheel.Poll], and it never moves
// backwards. Every uint64 deadline is representable; there is no maximum
// delay and no overflow list.
//
// Add(at, e) gives the timer the deadline max(at, Now()). A deadline that has
// already passed therefore becomes "due at the next Poll" and is ordered
// after the timers that are already due, as if it had been added at Now().
//
// # Firing order
//
// Poll(t) returns, one per call, every timer whose deadline is <= t, in
// increasing deadline order, and timers with equal deadlines in the order of
// their Add calls. No timer is returned before its deadline and none is
// skipped. While a Poll loop drains, Now() is the deadline of the timer just
// returned, not t: a callback that re-arms itself at Now()+period gets a
// drift-free period, and a timer it adds with a deadline <= t is returned by
// the same loop, in order. Once Poll(t) reports false, Now() is t (or
// unchanged, if t was behind it). A caller that wants a timeout measured
// from the real present should therefore compute it from its own clock, not
// from Now(), which lags behind t while a late batch drains.
//
// NextDeadline returns a tick T with Now() <= T <= the earliest deadline. It
// is exact unless the earliest slot lost its earliest timer to Cancel; then T
// is an older, smaller deadline of that slot, a Poll at T fires nothing, and
// the next NextDeadline is exact again. Polling at every NextDeadline thus
// makes each timer fire when Now() equals its deadline, and each such Poll
// strictly advances the wheel, so the loop cannot spin on one tick.
//
// # Handles
//
// Add returns a [Handle]: a node index and that node's generation. A node's
// generation is incremented whenever its timer fires or is canceled, before
// the node is reused, so a stale Handle (fired, canceled, or older than the
// node's current timer) never matches again and Cancel of it is a no-op
// that returns false. The generation is 64 bits on purpose: the free list is
// LIFO, so a loop of Add and Cancel recycles one node every few nanoseconds,
// and a 32-bit generation would wrap within a minute and let a Handle held
// that long cancel a stranger's timer. The zero Handle never matches. A
// Handle is only meaningful to the Wheel that issued it.
//
// # Concurrency
//
// A Wheel is not safe for concurrent use: it has no locks and no atomics,
// because it belongs to one reactor goroutine. Calls from several goroutines
// must be ordered by happens-before (for example by a mutex the caller
// holds), or they race.
//
// # Memory
//
// Timers live in intrusive 64-byte nodes addressed by uint32 index inside
// 64 KiB chunks, so the pool grows without moving existing nodes (no copy
// spike on a latency-sensitive loop), each node is one cache line, and links
// are indices, never pointers hidden in integers. Growing by a chunk is the
// only allocation; [Wheel.Reserve] does it ahead of time. The pool never
// shrinks: a wheel keeps the capacity of its busiest moment. When a timer
// fires or is canceled its Entry is cleared from the node, so the wheel never
// keeps a callback's captures alive.
//
// # Layout and invariants
//
// There are 11 levels of 64 slots; level L has slot width 64^L ticks, so
// the top level covers every uint64. Let now be Now(). Deadlines are placed
// by the highest bit in which they differ from now (as Tokio's timer wheel
// does), which the following invariants pin down:
//
//  1. A pending timer with deadline d == now is on the ready list; no
//     pending timer has d < now.
//  2. A pending timer with d > now is in level L = (bits.Len64(d^now)-1)/6,
//     slot (d >> 6L) & 63. So d and now agree on every bit above level L,
//     and d's level-L digit is greater than now's: the slot lies ahead of
//     now in the current rotation of its level and the wheel never wraps.
//     Consequently every timer of level L is earlier than every timer of
//     level L+1, the earliest timer is in the lowest occupied slot of the
//     lowest occupied level, and the start of that slot is found with two
//     trailing-zero counts on occupancy bitmaps.
//  3. The occupancy bit of a slot is set iff its list is non-empty, and a
//     level's bit in the level summary is set iff its bitmap is non-zero.
//  4. Poll never carries now past the start of the earliest occupied slot:
//     it stops now exactly there and re-places that slot's timers
//     (cascades) relative to the new now, to the ready list if d == now,
//     else to a lower level. Every other timer keeps (2) because now stays
//     below its slot and inside the same higher-level rotation. A timer
//     only moves down, so it cascades at most once per level, and a Poll
//     loop costs O(timers fired + cascades) however many ticks it crosses.
//  5. Poll only cascades or advances when the ready list is empty, so the
//     ready list only ever holds timers whose deadline is exactly now.
//  6. The placement in (2) is a function of (d, now), so all pending timers
//     with one deadline are always in the same list. Lists are FIFO and a
//     cascade moves a slot's timers in list order, so equal deadlines stay
//     in Add order without a sequence number.
//  7. Each slot keeps min, a lower bound of its deadlines: set when the slot
//     becomes non-empty, lowered on insert, never raised by Cancel. It is
//     what NextDeadline returns for the earliest slot, and is >= the slot's
//     start, which is > now.
//  8. A node is in exactly one of: a slot list, the ready list, the free
//     list. Its where field names which. A Handle matches only a node that is
//     not free and has the Handle's generation.
package timerwheel
