package engine

import (
	"runtime"

	"github.com/asyncsteps/asyncsteps/arena"
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

// enqueue appends c to f's queue of not-started sub-steps: c becomes the
// list's last frame (f.qlast), linked to the first.
func (f *Steps) enqueue(c *Steps) {
	if t := f.qlast; t == nil {
		c.next = c
	} else {
		c.next = t.next
		t.next = c
	}
	f.qlast = c
}

// dequeue removes and returns the first not-started sub-step (nil: none).
// The frame's next is left stale, not cleared (a store and its write
// barrier per step run): every later use of a frame's next writes it
// before anything reads it (enqueue, keep, toSpare, releasePlain,
// releaseFrame's reset, the free lists), and the only reads of a live
// frame's next outside a queue or a pool are of a loop iteration's
// (kBody: its kept frames), which is never queued, and External.Success's
// of the waiting step it completes, as a prefetch address only (parked's
// hint, which parked writes only into a waiting kStep). A stale next may keep
// the frame it points to from the GC (its allocation: up to buildChunk
// frames for one allocated off the loop); trimPools clears the next of
// every frame it drops, the free list's and the dropped roots' spares
// (dropFrames, dropSpares), so it never keeps a dropped chain. A stale
// next of the last frame dequeued is the frame itself.
func (f *Steps) dequeue() *Steps {
	t := f.qlast
	if t == nil {
		return nil
	}
	c := t.next
	if c == t {
		f.qlast = nil
	} else {
		t.next = c.next
	}
	return c
}

// queueFirst returns the first not-started sub-step of f, nil if none; with
// queueAfter it walks the queue in order without changing it (CopyFrom).
func (f *Steps) queueFirst() *Steps {
	if f.qlast == nil {
		return nil
	}
	return f.qlast.next
}

// queueAfter returns the sub-step queued after s in f's queue, nil after
// the last.
func (f *Steps) queueAfter(s *Steps) *Steps {
	if s == f.qlast {
		return nil
	}
	return s.next
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

// A loop iteration (kBody) keeps the frames of its sub-steps that ended
// holding nothing, for the sub-steps its next iteration adds: a body that
// adds the same steps each time (the common loop) then takes them back
// without the free list's counters and without resetting the fields that
// are the same (parent, fl, kind). The kept frames are a list through next
// whose head is the body's own next (an iteration is never queued, so its
// next is otherwise unused): with the queue (qlast) and fn, the list is in
// the iteration's first line, and an iteration that adds and keeps its
// steps never reads its second (see fBare). A kept
// frame is stFree, with flags 0, nothing queued, armed, timed, bound or
// allocated, no error handler and no AddWith value; it keeps its fn, fl
// and parent (the body, live, in the flow fl) until it is taken again or
// the body is destroyed (releaseFrame: dropKept; an iteration never takes
// releasePlain or toSpare), whatever ends the loop. Every sub-step frame of a body is taken through
// takeKept first (Add, addFrame), so the list never holds more frames than
// one iteration added. Kept frames count as live (Stats.FramesLive).

// keepable reports whether f, a step that ended plainly (nothing queued,
// armed, timed or left to cancel: the caller checked), holds nothing a kept
// frame may not keep.
func (f *Steps) keepable() bool {
	return f.flags&fBare != 0 || f.scope.Empty() && f.bin == nil && f.onerr == nil && f.x == nil && f.xfn == nil
}

// keep gives f, a keepable sub-step of the iteration p that ended, to p.
// Its callers decide on flags alone (fBare says the second line is empty);
// the asyncsteps_debug build checks the kept frame's contract here, so a
// writer of that state that forgot to clear fBare is found where the frame
// is kept, not in the next iteration's step.
func (p *Steps) keep(f *Steps) {
	if debugChecks {
		checkKeptFrame(f, "keep: a loop iteration kept")
	}
	f.flags, f.st = 0, stFree
	f.next = p.next
	p.next = f
}

// checkKeptFrame panics, naming what f holds, unless f may be kept (the kept
// frame's contract above, less what keep itself resets: flags and st).
// who names the caller and what it did (keep; toSpare, which trusts fBare
// the same way for a root's spare frames).
//
//go:noinline
func checkKeptFrame(f *Steps, who string) {
	var what string
	switch {
	case f.qlast != nil:
		what = "queued sub-steps"
	case f.ctl.Load()&xMask != xNone:
		what = "an External not spent"
	case f.tidx != 0:
		what = "a timer"
	case f.oncancel != nil:
		what = "a cancel or finally handler"
	case f.onerr != nil:
		what = "an error handler"
	case f.x != nil || f.xfn != nil:
		what = "an AddWith value"
	case f.bin != nil:
		what = "a binding"
	case !f.scope.Empty():
		what = "Stack memory"
	default:
		return
	}
	panic("engine: " + who + " a frame that holds " + what + " (a writer of it left fBare set?)")
}

// takeKept returns a frame kept by the iteration p for a new sub-step of
// kind, queued, or nil when p keeps none (or is not an iteration).
func (p *Steps) takeKept(kind uint8) *Steps {
	if p.kind != kBody || p.next == nil {
		return nil
	}
	c := p.next
	p.next = c.next
	c.next = nil
	c.kind = kind
	c.st = stQueued
	return c
}

// takeKeptOut is takeKept out of line, for addFrame: a call there costs
// the steps that are not a loop's body nothing but the kind test.
//
//go:noinline
func (p *Steps) takeKeptOut(kind uint8) *Steps { return p.takeKept(kind) }

// dropKept destroys the frames the iteration f keeps.
func (e *engine) dropKept(f *Steps) {
	c := f.next
	f.next = nil
	for c != nil {
		n := c.next
		c.next = nil
		e.releasePlain(c)
		c = n
	}
}

// releaseFrame destroys a frame: its timer stops, its Stack memory is
// freed, and it returns to a free list with a new generation. Loop only.
func (e *engine) releaseFrame(f *Steps) {
	if f.kind == kBody && f.next != nil {
		e.dropKept(f)
	}
	if f.qlast != nil {
		e.discardQueued(f) // never lose queued frames, whatever path ends f
	}
	if f.timed() {
		e.r.Stop(f.timer())
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
	f.fl, f.parent, f.next, f.qlast = nil, nil, nil, nil
	f.fn, f.onerr, f.oncancel = nil, nil, nil
	f.tidx, f.tgen = 0, 0
	f.scope = arena.Scope{}
	f.x, f.xfn, f.bin = nil, nil, nil
	f.kind, f.flags, f.st = 0, 0, stFree
}

// discardQueued destroys f's not-started sub-steps (recursively: a queued
// parallel step holds queued branches).
func (e *engine) discardQueued(f *Steps) {
	for c := f.dequeue(); c != nil; c = f.dequeue() {
		e.discardQueued(c)
		e.releaseFrame(c)
	}
}
