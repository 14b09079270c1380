package timerwheel

import "unsafe"

const (
	// chunkShift sizes a chunk at 1024 nodes (64 KiB). Above 32 KiB the
	// runtime allocates an object on its own pages, so the chunk and every
	// 64-byte node in it are cache-line aligned; a smaller chunk carries an
	// 8-byte malloc header that leaves every node straddling two lines.
	// One growth step is still only a short pause.
	chunkShift = 10
	chunkLen   = 1 << chunkShift
	chunkMask  = chunkLen - 1

	// maxChunks keeps every node index inside uint32.
	maxChunks = 1 << (32 - chunkShift)
)

// Values of node.where other than slot numbers. Slot numbers are below
// numWheelSlots, and whereReady is also the index of the ready list in
// Wheel.lists, so unlink needs no branch to find a node's list.
const (
	whereReady = numWheelSlots
	whereFree  = 0xFFFF
)

// node is one timer. Nodes are linked by index, not pointer, so the pool can
// hold them in chunks the garbage collector scans as plain arrays, and a
// Handle can be a small comparable value.
type node struct {
	entry    Entry
	deadline uint64
	gen      uint64
	next     uint32 // next in its slot, ready or free list; 0 ends the list
	prev     uint32 // previous in its slot or ready list; 0 at the head
	where    uint16 // slot number, whereReady or whereFree (invariant 8)
}

// pool hands out nodes by index. Index 0 is a permanently free dummy so
// that 0 can mean "no node" in links and the zero Handle matches nothing.
type pool struct {
	chunks []*[chunkLen]node
	free   uint32 // head of the free list, linked through node.next
	// genFloor is the generation a new chunk's nodes start at: above
	// every generation a node dropped by Shrink reached, so a Handle to a
	// dropped node never matches the node allocated again at its index.
	genFloor uint64
}

// nodeBytes is a node's size, for Shrink's report.
const nodeBytes = int(unsafe.Sizeof(node{}))

// at returns node i. i must be below capacity()+1.
func (p *pool) at(i uint32) *node {
	return &p.chunks[i>>chunkShift][i&chunkMask]
}

// lookup returns the pending node h names, or nil when h is zero, stale,
// from a bigger pool, or names a free node. It never panics, because handles
// outlive the timers they name.
func (p *pool) lookup(h Handle) *node {
	c := uint(h.idx >> chunkShift)
	if c >= uint(len(p.chunks)) {
		return nil
	}
	n := &p.chunks[c][h.idx&chunkMask]
	if n.gen != h.gen || n.where == whereFree {
		return nil
	}
	return n
}

// release clears the node's Entry, so the callback's captures become
// garbage now, and bumps the generation before the node can be reused, so
// every Handle to the finished timer goes stale.
func (p *pool) release(i uint32, n *node) {
	n.entry = Entry{}
	n.gen++
	n.where = whereFree
	n.prev = 0
	n.next = p.free
	p.free = i
}

// capacity is the number of usable nodes (the dummy excluded).
func (p *pool) capacity() int {
	return len(p.chunks)*chunkLen - 1
}

// grow adds one chunk to the free list and returns the head of the free
// list. It is kept out of line so that Add, which calls it once per chunk,
// stays compact.
//
//go:noinline
func (p *pool) grow() uint32 {
	if len(p.chunks) >= maxChunks {
		panic("timerwheel: more than 2^32-1 timers")
	}
	c := new([chunkLen]node)
	base := uint32(len(p.chunks)) << chunkShift
	p.chunks = append(p.chunks, c)
	first := 0
	if base == 0 {
		first = 1 // node 0 is the dummy; it stays marked free forever
		c[0].where = whereFree
	}
	// Link back to front so the lowest index is handed out first; that
	// keeps a warm wheel's working set at the start of the pool.
	next := p.free
	for j := chunkLen - 1; j >= first; j-- {
		c[j].gen = p.genFloor
		c[j].where = whereFree
		c[j].next = next
		next = base + uint32(j)
	}
	p.free = next
	return next
}
