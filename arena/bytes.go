package arena

import (
	"fmt"
	"math/bits"
	"unsafe"
)

const (
	// MinClassSize is the smallest byte-slab block. It is at least a word so
	// that a free block can hold the intrusive free-list link.
	MinClassSize = 8
	// MaxClassSize is the largest byte-slab block. Pointer-free types
	// larger than this come from typed slabs instead: rounding them up to
	// a power of two would waste too much of each slab.
	MaxClassSize = 4096
	// NumClasses is the number of byte-slab size classes: the powers of two
	// from MinClassSize to MaxClassSize.
	NumClasses = 10
	// SlabSize is the length of one mmap'ed byte slab. Every class uses the
	// same size so that the per-class bookkeeping is uniform; untouched
	// pages of a slab cost no resident memory.
	SlabSize = 64 << 10
)

const minClassShift = 3 // log2(MinClassSize)

// classFor returns the size class of a pointer-free type, or -1 if the type
// is too large for byte slabs. Blocks of a power-of-two class are aligned to
// their size (slabs are page aligned), so rounding max(size, align) up to a
// power of two also satisfies the alignment.
func classFor(size, align uintptr) int {
	n := max(size, align, MinClassSize)
	if n > MaxClassSize {
		return -1
	}
	return bits.Len(uint(n-1)) - minClassShift
}

// classSize returns the block size of class c.
func classSize(c int) uintptr { return MinClassSize << uint(c) }

// byteClass is the free list and bump region of one size class.
//
// Invariant: every block on the free list is all zero except its first
// word, which holds the link to the next free block (nil at the end). Fresh
// slab memory is zero from mmap. So Alloc only has to clear one word, and
// Release zeroes the bytes the caller could have written.
//
// The pointers here (free, bump) point into mmap'ed memory, which the
// garbage collector ignores. They never point one past the end of a slab:
// that address could be the start of a Go heap arena, and the GC would
// reject a pointer into a free span there.
type byteClass struct {
	free unsafe.Pointer // head of the intrusive free list
	bump unsafe.Pointer // next never-used block; nil when left == 0
	left int            // never-used blocks remaining from bump
	size uintptr        // block size

	inUse  int // blocks handed out
	carved int // blocks ever taken from bump
	slabs  int // slabs mapped for this class
}

// allocBytes returns a zeroed block of class c.
func (a *Arena) allocBytes(c int) unsafe.Pointer {
	bc := &a.classes[c]
	if p := bc.free; p != nil {
		link := (*unsafe.Pointer)(p)
		bc.free = *link
		*link = nil
		bc.inUse++
		return p
	}
	if bc.left > 0 {
		p := bc.bump
		bc.left--
		if bc.left > 0 {
			bc.bump = unsafe.Add(p, bc.size)
		} else {
			bc.bump = nil
		}
		bc.carved++
		bc.inUse++
		return p
	}
	return a.growClass(c)
}

// growClass maps a new slab for class c and returns its first block. It is
// the only place byte memory is obtained from the OS.
func (a *Arena) growClass(c int) unsafe.Pointer {
	if a.closed {
		panic("arena: Alloc after Close")
	}
	slab, err := mapSlab(SlabSize)
	if err != nil {
		// Running out of address space is as fatal here as it is for the
		// Go allocator; a step cannot proceed without its memory.
		panic(fmt.Sprintf("arena: mapping a %d-byte slab: %v", SlabSize, err))
	}
	a.mapped = append(a.mapped, slab)
	a.mappedClass = append(a.mappedClass, int8(c))
	bc := &a.classes[c]
	bc.slabs++
	base := unsafe.Pointer(unsafe.SliceData(slab))
	bc.left = SlabSize/int(bc.size) - 1
	if bc.left > 0 {
		bc.bump = unsafe.Add(base, bc.size)
	}
	bc.carved++
	bc.inUse++
	return base
}

// freeBytes zeroes the first size bytes of p, which is all the caller could
// have written, and pushes p onto the free list of class c.
func (a *Arena) freeBytes(c int, size uintptr, p unsafe.Pointer) {
	clear(unsafe.Slice((*byte)(p), size))
	bc := &a.classes[c]
	*(*unsafe.Pointer)(p) = bc.free
	bc.free = p
	bc.inUse--
}

// inSlabs reports whether p points into memory this Arena mapped.
func (a *Arena) inSlabs(p unsafe.Pointer) bool {
	u := uintptr(p)
	for _, s := range a.mapped {
		b := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
		if u >= b && u < b+uintptr(len(s)) {
			return true
		}
	}
	return false
}

// Trim returns to the OS the byte slabs of every size class with no block
// in use, so that a burst's Stack memory does not stay resident once the
// burst is over; the class starts afresh from a new slab at its next
// Alloc. A class with blocks in use keeps its slabs: its free list runs
// through them. It does not allocate unless a slab is unmapped (then it
// compacts the slab lists in place). Call it when the owner is idle: an
// Alloc that follows maps a slab again (one mmap per class).
//
// It reports the bytes unmapped.
func (a *Arena) Trim() int {
	var idle [NumClasses]bool
	found := false
	for c := range a.classes {
		if bc := &a.classes[c]; bc.inUse == 0 && bc.slabs > 0 {
			idle[c], found = true, true
		}
	}
	if !found {
		return 0
	}
	n, j := 0, 0
	for i, s := range a.mapped {
		c := a.mappedClass[i]
		if !idle[c] {
			a.mapped[j], a.mappedClass[j] = s, c
			j++
			continue
		}
		// No block of class c is in use, so no pointer into s is live:
		// every scope that allocated from it has released it.
		if err := unmapSlab(s); err != nil {
			panic(fmt.Sprintf("arena: unmapping an idle slab: %v", err))
		}
		n += len(s)
	}
	clear(a.mapped[j:])
	a.mapped, a.mappedClass = a.mapped[:j], a.mappedClass[:j]
	for c, ok := range idle {
		if ok {
			a.classes[c] = byteClass{size: classSize(c)}
		}
	}
	return n
}
