package engine

import (
	"runtime"

	"github.com/asyncsteps/asyncsteps/arena"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A *Steps is two things, and its methods say which by their receiver's
// name: as, the accessor a user's callback holds (the public API, which
// checks that it is used by the running step), and f, the frame the engine
// schedules (internal methods, which trust their caller). This file holds
// the frame's life: its status, its External state, its pool.

func (f *Steps) status() uint8      { return f.st }
func (f *Steps) setStatus(st uint8) { f.st = st }

// disarm makes every External of f stale before the loop fails, cancels or
// destroys it. A result being written on another goroutine is waited out:
// the writer holds xWriting only for the copy of a few words. It reports
// whether a result had been delivered (xClaimed): it is left in the flow's
// mailbox for the caller to apply, or to clear.
func (f *Steps) disarm() (claimed bool) {
	for {
		c := f.ctl.Load()
		switch c & xMask {
		case xNone:
			return false
		case xWriting:
			runtime.Gosched()
		default:
			if f.ctl.CompareAndSwap(c, c&^xMask) {
				return c&xMask == xClaimed
			}
		}
	}
}

// releaseClaim disarms f, dropping a delivered result: the step is being
// canceled or has already ended otherwise. The mailbox is cleared so it
// pins nothing.
func (f *Steps) releaseClaim() {
	if f.disarm() {
		f.fl.clearMailbox()
	}
}

// enqueue appends c to f's queue of not-started sub-steps.
func (f *Steps) enqueue(c *Steps) {
	if f.tail == nil {
		f.head = c
	} else {
		f.tail.next = c
	}
	f.tail = c
}

// dequeue removes and returns the first not-started sub-step.
func (f *Steps) dequeue() *Steps {
	c := f.head
	if c != nil {
		f.head = c.next
		if f.head == nil {
			f.tail = nil
		}
		c.next = nil
	}
	return c
}

// frameChunk is how many frames the loop allocates at once when its free
// list runs dry, so that growth is rare. Each is its own allocation, not
// part of one chunk: a chunk lives while any of its frames does, so the
// few frames a loop keeps after a burst would keep most chunks (trim.go).
const frameChunk = 64

// newFrame takes a frame from the loop's free list. Loop only.
func (e *engine) newFrame(kind uint8, parent *Steps, fl *flow) *Steps {
	f := e.free
	if f == nil {
		f = e.grow()
	}
	e.free = f.next
	e.stats.FramesLive++
	if e.stats.FramesFree--; e.stats.FramesFree < e.trim.freeLow {
		e.trim.freeLow = e.stats.FramesFree
	}
	f.next = nil
	f.kind = kind
	f.parent = parent
	f.fl = fl
	f.setStatus(stQueued)
	return f
}

func (e *engine) grow() *Steps {
	e.stats.FramesCreated += frameChunk
	e.stats.FramesFree += frameChunk
	var next *Steps
	for i := 0; i < frameChunk; i++ {
		f := &Steps{e: e}
		f.next = next
		next = f
	}
	e.free = next
	return next
}

// releaseFrame destroys a frame: its timer stops, its Stack memory is
// freed, and it returns to a free list with a new generation. Loop only.
func (e *engine) releaseFrame(f *Steps) {
	if f.head != nil {
		e.discardQueued(f) // never lose queued frames, whatever path ends f
	}
	if !f.timer.IsZero() {
		e.r.Stop(f.timer)
	}
	if !f.scope.Empty() {
		e.ar.Release(&f.scope)
	}
	if f.ctl.Load()&xMask != xNone {
		f.releaseClaim()
	}
	if f.bin != nil {
		bridge.release(f.bin, true)
	}
	var rt *root
	if f.fl != nil {
		rt = f.fl.root
	}
	f.reset()
	e.stats.FramesLive--
	if rt != nil && rt.spareN < rt.spareCap {
		// Give the frame back to the root that is finishing, so that the
		// next build of that root off the loop can take it without a lock.
		f.next = rt.spare
		rt.spare = f
		rt.spareN++
		return
	}
	f.next = e.free
	e.free = f
	if e.stats.FramesFree++; e.stats.FramesFree > trimFloor && !e.trim.armed {
		e.armTrim()
	}
}

// reset clears every field but e and ctl: ctl may be read by a stale
// External at any time, so it is never written non-atomically.
func (f *Steps) reset() {
	f.fl, f.parent, f.next, f.head, f.tail = nil, nil, nil, nil, nil
	f.fn, f.onerr, f.oncancel = nil, nil, nil
	f.timer = reactor.Timer{}
	f.scope = arena.Scope{}
	f.x, f.xfn, f.bin = nil, nil, nil
	f.n, f.kind, f.flags, f.st = 0, 0, 0, stFree
}

// discardQueued destroys f's not-started sub-steps (recursively: a queued
// parallel step holds queued branches).
func (e *engine) discardQueued(f *Steps) {
	for c := f.dequeue(); c != nil; c = f.dequeue() {
		e.discardQueued(c)
		e.releaseFrame(c)
	}
}
