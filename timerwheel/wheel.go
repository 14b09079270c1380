package timerwheel

import (
	"errors"
	"math/bits"
	"unsafe"
)

const (
	slotBits  = 6 // 64 slots per level: one uint64 occupancy bitmap each
	numSlots  = 1 << slotBits
	slotMask  = numSlots - 1
	numLevels = (64 + slotBits - 1) / slotBits // 11: the top level covers all of uint64

	numWheelSlots = numLevels * numSlots
)

// spanMask[L] masks the tick bits that vary inside one rotation of level L
// (64^(L+1) ticks). A table, because 64^11 does not fit in a uint64.
var spanMask = func() (m [numLevels]uint64) {
	for l := range m {
		if s := (l + 1) * slotBits; s < 64 {
			m[l] = 1<<s - 1
		} else {
			m[l] = ^uint64(0)
		}
	}
	return m
}()

// levelOf[bits.Len64(d^now)] is the level of deadline d (invariant 2). A
// table load is shorter on the Add path than a divide by 6. Index 0
// (d == now) never occurs: such timers go to the ready list.
var levelOf = func() (t [65]uint8) {
	for n := 1; n <= 64; n++ {
		t[n] = uint8((n - 1) / slotBits)
	}
	return t
}()

// errEmptyEntry is a prebuilt panic value, so that Add converts no string to
// an interface and escape analysis of the hot path stays clean.
var errEmptyEntry = errors.New("timerwheel: Add of an Entry with neither Fn nor Cb")

// Entry is what a timer runs. Exactly one of Fn or Cb is set. Cb with Arg
// and Aux lets a caller schedule a method on an object it already has
// without allocating a closure per timer.
type Entry struct {
	Fn  func()
	Cb  func(arg unsafe.Pointer, aux uint64)
	Arg unsafe.Pointer
	Aux uint64
}

// Handle identifies one scheduled timer, so that it can be canceled without
// the wheel handing out pointers into its pool. The zero Handle is never
// valid. Handles are comparable; see the package documentation for why an
// old Handle never matches a newer timer.
type Handle struct {
	idx uint32
	gen uint64
}

// Parts returns the handle's node index and generation, so that a handle can
// travel through plain integer fields (the reactor's cross-goroutine tasks).
func (h Handle) Parts() (idx uint32, gen uint64) { return h.idx, h.gen }

// HandleOf rebuilds a Handle from Parts. A forged handle is harmless: it is
// generation-checked like any other and matches no timer unless both parts do.
func HandleOf(idx uint32, gen uint64) Handle { return Handle{idx: idx, gen: gen} }

// IsZero reports whether h is the zero Handle, which callers use as "no
// timer armed".
func (h Handle) IsZero() bool { return h.idx == 0 }

// Changes counts the Adds and the Cancels that took a timer out: two equal
// values mean no timer was added or canceled in between (a Poll that fires
// one does not count), so that a reactor that armed its OS timer for
// NextDeadline knows that arming still stands.
func (w *Wheel) Changes() uint64 { return w.adds + w.cancels }

// Stats is a snapshot of a Wheel's size and activity, for metrics.
type Stats struct {
	Pending        int    // timers added and neither fired nor canceled
	NodesAllocated int    // capacity of the node pool; only Shrink makes it smaller
	Adds           uint64 // successful Add calls
	Cancels        uint64 // Cancel calls that returned true
	Fires          uint64 // timers returned by Poll
	Cascades       uint64 // times a timer moved from a slot to a lower level or the ready list
}

// slot is a FIFO list of nodes plus a lower bound of their deadlines
// (invariant 7).
type slot struct {
	head, tail uint32
	min        uint64
}

// Wheel is a hierarchical timing wheel. See the package documentation for
// its contract and invariants. The zero Wheel is an empty wheel at tick 0,
// so a reactor may embed one by value; New chooses the start tick and
// allocates the first chunk up front.
type Wheel struct {
	now     uint64
	pool    pool
	levels  uint16 // bit L set iff occupied[L] != 0 (invariant 3)
	pending int

	occupied [numLevels]uint64 // bit s of occupied[L] set iff slot L*64+s is non-empty

	adds, cancels, fires, cascades uint64

	// slots[whereReady] is the ready list (invariants 1 and 5); its min is
	// unused.
	slots [numWheelSlots + 1]slot
}

// New returns an empty wheel whose current tick is now. It allocates the
// first chunk of nodes so that the first Add does not.
func New(now uint64) *Wheel {
	w := &Wheel{now: now}
	w.pool.grow()
	return w
}

// Now returns the tick the wheel has advanced to. Deadlines at or before it
// are due; see the package documentation for its value during a Poll loop.
func (w *Wheel) Now() uint64 { return w.now }

// Len returns the number of pending timers.
func (w *Wheel) Len() int { return w.pending }

// Stats returns a snapshot for metrics. The counters are plain fields
// updated on every operation, so reading them costs nothing extra.
func (w *Wheel) Stats() Stats {
	return Stats{
		Pending:        w.pending,
		NodesAllocated: w.pool.capacity(),
		Adds:           w.adds,
		Cancels:        w.cancels,
		Fires:          w.fires,
		Cascades:       w.cascades,
	}
}

// Reserve grows the node pool so that n more timers than are pending now
// can be added without allocating, moving the allocations out of a
// latency-critical section.
func (w *Wheel) Reserve(n int) {
	for w.pool.capacity()-w.pending < n {
		w.pool.grow()
	}
}

// Add schedules e to be returned by Poll at tick at, or at the next Poll if
// at <= Now(), and returns a Handle that can cancel it. It panics if e has
// neither Fn nor Cb, so the mistake shows at the Add and not later, as a nil
// call in whoever runs the timer.
func (w *Wheel) Add(at uint64, e Entry) Handle {
	if e.Fn == nil && e.Cb == nil {
		panic(errEmptyEntry)
	}
	// Node allocation and place are written out here because the compiler
	// will not inline them, and the two calls cost a fifth of Add+Cancel.
	i := w.pool.free
	if i == 0 {
		i = w.pool.grow()
	}
	n := w.pool.at(i)
	w.pool.free = n.next
	n.entry = e
	w.pending++
	w.adds++
	if at <= w.now {
		w.pushReady(i, n)
		return Handle{idx: i, gen: n.gen}
	}
	n.deadline = at
	lvl := uint(levelOf[bits.Len64(at^w.now)])
	s := uint(at>>(lvl*slotBits&63)) & slotMask
	idx := lvl<<slotBits | s
	sl := &w.slots[idx]
	if sl.head == 0 {
		sl.min = at
		w.occupied[lvl] |= 1 << s
		w.levels |= 1 << lvl
	} else if at < sl.min {
		sl.min = at
	}
	n.where = uint16(idx)
	w.push(sl, i, n)
	return Handle{idx: i, gen: n.gen}
}

// Cancel stops the timer h names. It reports whether the timer was pending;
// for a zero, stale or already fired Handle it returns false and changes
// nothing, so callers may cancel unconditionally.
func (w *Wheel) Cancel(h Handle) bool {
	n := w.pool.lookup(h)
	if n == nil {
		return false
	}
	// Unlink from the slot or ready list in O(1), keeping the occupancy
	// bitmaps exact (invariant 3).
	sl := &w.slots[n.where]
	if n.prev != 0 {
		w.pool.at(n.prev).next = n.next
	} else {
		sl.head = n.next
	}
	if n.next != 0 {
		w.pool.at(n.next).prev = n.prev
	} else {
		sl.tail = n.prev
	}
	if sl.head == 0 && n.where != whereReady {
		w.clearSlot(uint(n.where)>>slotBits, uint(n.where)&slotMask)
	}
	w.pool.release(h.idx, n)
	w.pending--
	w.cancels++
	return true
}

// Valid reports whether the timer h names is still pending.
func (w *Wheel) Valid(h Handle) bool { return w.pool.lookup(h) != nil }

// Poll advances the wheel to tick now and returns one due timer's Entry, or
// false when no timer is due at now. The node is released before Poll
// returns, so the Entry may Add and Cancel freely. A now below Now() is
// treated as Now(), so a caller's clock that steps back cannot rewind the
// wheel.
func (w *Wheel) Poll(now uint64) (Entry, bool) {
	for {
		if i := w.slots[whereReady].head; i != 0 {
			return w.fire(i), true
		}
		if w.levels == 0 {
			break
		}
		lvl := uint(bits.TrailingZeros16(w.levels))
		s := uint(bits.TrailingZeros64(w.occupied[lvl]))
		start := w.now&^spanMask[lvl] | uint64(s)<<(lvl*slotBits)
		if start > now {
			break
		}
		// Invariant 4: stop at the slot's start before going past it.
		w.now = start
		w.cascade(lvl, s)
	}
	if now > w.now {
		w.now = now
	}
	return Entry{}, false
}

// NextDeadline returns a tick T with Now() <= T <= the earliest pending
// deadline, so a reactor knows how long it may sleep; false when no timer is
// pending. T is exact unless the earliest timer of the earliest slot was
// canceled; see the package documentation.
func (w *Wheel) NextDeadline() (uint64, bool) {
	if w.slots[whereReady].head != 0 {
		return w.now, true
	}
	if w.levels == 0 {
		return 0, false
	}
	lvl := uint(bits.TrailingZeros16(w.levels))
	s := uint(bits.TrailingZeros64(w.occupied[lvl]))
	return w.slots[lvl<<slotBits|s].min, true
}

// place links node i, whose Entry is set, into the list its deadline at
// belongs to relative to w.now (invariants 1 and 2). Add has a copy of this
// body; keep the two in step.
func (w *Wheel) place(i uint32, n *node, at uint64) {
	if at <= w.now {
		w.pushReady(i, n)
		return
	}
	n.deadline = at
	lvl := uint(levelOf[bits.Len64(at^w.now)])
	s := uint(at>>(lvl*slotBits&63)) & slotMask
	idx := lvl<<slotBits | s
	sl := &w.slots[idx]
	if sl.head == 0 {
		sl.min = at
		w.occupied[lvl] |= 1 << s
		w.levels |= 1 << lvl
	} else if at < sl.min {
		sl.min = at
	}
	n.where = uint16(idx)
	w.push(sl, i, n)
}

// pushReady makes node i due at w.now, behind the timers already due
// (invariants 1 and 6).
func (w *Wheel) pushReady(i uint32, n *node) {
	n.deadline = w.now
	n.where = whereReady
	w.push(&w.slots[whereReady], i, n)
}

// push appends node i to the tail of sl, keeping lists FIFO (invariant 6).
func (w *Wheel) push(sl *slot, i uint32, n *node) {
	n.next = 0
	n.prev = sl.tail
	if sl.tail != 0 {
		w.pool.at(sl.tail).next = i
	} else {
		sl.head = i
	}
	sl.tail = i
}

// clearSlot marks a slot empty in its bitmap and, with its level's last
// slot, the level in the summary, so Poll and NextDeadline never visit an
// empty slot (invariant 3).
func (w *Wheel) clearSlot(lvl, s uint) {
	w.occupied[lvl] &^= 1 << s
	if w.occupied[lvl] == 0 {
		w.levels &^= 1 << lvl
	}
}

// fire pops node i, the head of the ready list, and releases it.
func (w *Wheel) fire(i uint32) Entry {
	n := w.pool.at(i)
	ready := &w.slots[whereReady]
	ready.head = n.next
	if n.next != 0 {
		w.pool.at(n.next).prev = 0
	} else {
		ready.tail = 0
	}
	e := n.entry
	w.pool.release(i, n)
	w.pending--
	w.fires++
	return e
}

// cascade empties slot s of level lvl, whose start w.now has just reached,
// and re-places its timers relative to w.now, in list order so that equal
// deadlines keep their Add order (invariant 6).
func (w *Wheel) cascade(lvl, s uint) {
	sl := &w.slots[lvl<<slotBits|s]
	i := sl.head
	sl.head, sl.tail = 0, 0
	w.clearSlot(lvl, s)
	for i != 0 {
		n := w.pool.at(i)
		next := n.next
		w.place(i, n, n.deadline)
		w.cascades++
		i = next
	}
}
