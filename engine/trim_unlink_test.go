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

// A root the pools drop takes its spare frames with it, linked through
// next; a stale next of a live frame (dequeue) may point at one of them (a
// frame that went back to the free list and then to another root's
// spares), and would keep the rest of that chain, up to the dropped
// root's spareCap (its built size), from the GC. Both root pools' trims
// must unlink the spares of the roots they drop.
func TestTrimUnlinksDroppedRootSpares(t *testing.T) {
	for _, shared := range []bool{false, true} {
		r := reactor.NewManual()
		e := engineOf(r)
		const nroots, nspare = rootQuarantine + 3, 4
		var roots []*root
		var spares [][]*Steps
		for i := 0; i < nroots; i++ {
			rt := new(root)
			var fs []*Steps
			for j := 0; j < nspare; j++ {
				f := &Steps{e: e}
				f.next = rt.spare
				rt.spare = f
				rt.spareN++
				fs = append(fs, f)
			}
			roots = append(roots, rt)
			spares = append(spares, fs)
			if shared {
				e.rootFree.push(rt)
			} else {
				e.rootLocal.push(rt)
			}
		}
		e.rootFree.low, e.rootLocal.low = e.rootFree.n, e.rootLocal.n()
		r.Immediate(e.trimPools)
		r.RunUntilIdle()
		dropped := nroots - rootQuarantine
		for i, rt := range roots {
			n := 0
			for f := rt.spare; f != nil; f = f.next {
				n++
			}
			if i >= dropped && n != nspare {
				t.Fatalf("shared %v: kept root %d has %d spares, want %d", shared, i, n, nspare)
			}
		}
		for i, fs := range spares[:dropped] {
			for j, f := range fs {
				if f.next != nil {
					t.Fatalf("shared %v: dropped root %d's spare %d still links to another", shared, i, j)
				}
			}
		}
	}
}

// parked leaves a flow's address in another waiting flow's prevReady, and
// that flow may later go to a pool and be dropped; a dropped flow's own
// hint would then keep a third from the GC, and so on along a chain. Every
// flow a trim lets go (the root flow pool's, and those the dropped roots
// of both root pools kept) has its prevReady cleared.
func TestTrimClearsDroppedFlowHints(t *testing.T) {
	r := reactor.NewManual()
	e := engineOf(r)
	hint := &flow{}
	var dropped []*flow
	const nfree = 3
	for i := 0; i < nfree; i++ {
		fl := &flow{e: e, prevReady: hint}
		fl.nextBranch = e.freeRootFlows
		e.freeRootFlows = fl
		e.stats.RootFlowsFree++
		dropped = append(dropped, fl)
	}
	e.trim.flowsLow = nfree
	const nroots = rootQuarantine + 2
	var kept []*flow
	for _, shared := range []bool{false, true} {
		for i := 0; i < nroots; i++ {
			rt := new(root)
			fl := &flow{e: e, prevReady: hint}
			rt.Steps.fl = fl
			if i < nroots-rootQuarantine {
				dropped = append(dropped, fl)
			} else {
				kept = append(kept, fl)
			}
			if shared {
				e.rootFree.push(rt)
			} else {
				e.rootLocal.push(rt)
			}
		}
	}
	e.rootFree.low, e.rootLocal.low = e.rootFree.n, e.rootLocal.n()
	r.Immediate(e.trimPools)
	r.RunUntilIdle()
	if e.freeRootFlows != nil {
		t.Fatalf("%d root flows still free after the trim, want 0", e.stats.RootFlowsFree)
	}
	for i, fl := range dropped {
		if fl.prevReady != nil {
			t.Errorf("dropped flow %d still holds a hint", i)
		}
	}
	for i, fl := range kept {
		if fl.prevReady != hint {
			t.Errorf("kept flow %d lost its hint: the trim touched a root it kept", i)
		}
	}
}
