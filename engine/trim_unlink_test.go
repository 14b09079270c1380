package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// dequeue leaves a frame's next stale, so a live frame may point at a
// frame the pool later drops. trimPools must unlink every frame it lets
// go: a chain left linked would be kept whole by one such pointer. Both
// ways a trim ends the free list are checked: keeping some, keeping none.
func TestTrimUnlinksDroppedFrames(t *testing.T) {
	for _, keep := range []int{0, 3} {
		r := reactor.NewManual()
		e := engineOf(r)
		e.grow()
		e.grow()
		var all []*Steps
		for f := e.free; f != nil; f = f.next {
			all = append(all, f)
		}
		drop := e.stats.FramesFree - keep
		e.trim.freeLow = drop
		r.Immediate(e.trimPools) // it trims the reactor's timers too: on the loop
		r.RunUntilIdle()
		if e.stats.FramesFree != keep {
			t.Fatalf("keep %d: %d frames free after the trim", keep, e.stats.FramesFree)
		}
		n := 0
		for f := e.free; f != nil; f = f.next {
			n++
		}
		if n != keep {
			t.Fatalf("keep %d: the free list has %d frames", keep, n)
		}
		for i, f := range all[keep:] {
			if f.next != nil {
				t.Fatalf("keep %d: dropped frame %d of %d still links to another", keep, i, drop)
			}
		}
	}
}
