package timerwheel

// Shrink gives the node pool's memory back after a burst of timers: it
// relinks the free list in index order, so that new timers take the lowest
// free nodes and the pool's high end empties, and it drops the trailing
// chunks (1024 nodes, 64 KiB each) in which no timer is pending, for the
// garbage collector to take. The first chunk is always kept. It reports
// the bytes dropped. Its cost is one pass over the pool; call it when the
// owner is idle, not per timer (the reactor calls it from the engine's
// idle trim). Nodes a later burst needs are allocated again.
//
// Handles stay safe: a node dropped and then allocated again starts at a
// generation above every generation its chunk's nodes reached
// (pool.genFloor), so no Handle issued before the drop matches it.
func (w *Wheel) Shrink() int {
	p := &w.pool
	keep := len(p.chunks)
	for keep > 1 && chunkFree(p.chunks[keep-1]) {
		keep--
	}
	for c := keep; c < len(p.chunks); c++ {
		for j := range p.chunks[c] {
			p.genFloor = max(p.genFloor, p.chunks[c][j].gen)
		}
		p.chunks[c] = nil
	}
	dropped := (len(p.chunks) - keep) * chunkLen * nodeBytes
	p.chunks = p.chunks[:keep]
	// Relink the free list, lowest index first, over what is kept.
	p.free = 0
	for i := uint32(p.capacity()); i >= 1; i-- {
		if n := p.at(i); n.where == whereFree {
			n.next = p.free
			p.free = i
		}
	}
	return dropped
}

// chunkFree reports whether no node of c is pending.
func chunkFree(c *[chunkLen]node) bool {
	for j := range c {
		if c[j].where != whereFree {
			return false
		}
	}
	return true
}
