package engine

import "sync/atomic"

// The build pool: frames for roots built off the loop, shared under
// rootMu. The loop's free list is the loop's alone, so a goroutine that
// builds a fresh root (no spare frames) used to allocate its first frame,
// and that frame died with the root when the root was never Released: a
// second allocation per plain New ... Execute. Now New, off the loop,
// takes one frame from this pool under the lock it already holds, and the
// loop refills the pool from its free list in batches (one lock per
// buildRefill frames), so frames are never garbage: a fresh root's frames
// go back to the loop's free list at the end of its first run (see
// prepareStart's spareCap), and only the root itself is left to the GC.

// buildRefill is how many frames the loop moves into the pool at once;
// New asks for a refill when the pool falls to buildLow.
const (
	buildRefill = 64
	buildLow    = buildRefill / 4
	buildMax    = 4 * buildRefill // the most frames the pool holds
)

// buildPool is the engine's part: the list and its count are guarded by
// rootMu; want is read by the loop without the lock.
type buildPool struct {
	free *Steps // linked by next
	n    int
	want atomic.Bool // the pool ran low: the loop refills it at the next start
}

// takeBuild takes up to n frames from the pool as a list, and the count.
// Call with rootMu held.
func (e *engine) takeBuild(n int) (*Steps, int) {
	p := &e.build
	head := p.free
	if head == nil {
		if !p.want.Load() {
			p.want.Store(true)
		}
		return nil, 0
	}
	f, k := head, 1
	for k < n && f.next != nil {
		f = f.next
		k++
	}
	p.free, f.next = f.next, nil
	if p.n -= k; p.n < buildLow && !p.want.Load() {
		p.want.Store(true)
	}
	return head, k
}

// refillBuild moves up to buildRefill frames from the loop's free list into
// the pool, unless it is full. The run is cut from the list as it is,
// without relinking each frame: two pointer writes, not one per frame.
// Loop only; called at a root's start when the pool ran low.
func (e *engine) refillBuild() {
	head := e.free
	if head == nil {
		head = e.grow()
	}
	tail, k := head, 1
	for k < buildRefill && tail.next != nil {
		tail = tail.next
		k++
	}
	e.rootMu.Lock()
	full := e.build.n+k > buildMax
	if !full {
		e.free = tail.next
		tail.next = e.build.free
		e.build.free = head
		e.build.n += k
	}
	e.build.want.Store(false)
	e.rootMu.Unlock()
	if full {
		return
	}
	if e.stats.FramesFree -= k; e.stats.FramesFree < e.trim.freeLow {
		e.trim.freeLow = e.stats.FramesFree
	}
}
