//go:build linux

package reactor

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/internal/goid"
)

// loopOf (owe's lookup) finds a loop from its own callbacks through its
// slot, or through the loops map when another loop holds the slot, finds
// nothing for other goroutines, and a closed loop leaves its slot free.
func TestLoopOf(t *testing.T) {
	if loopOf(goid.Current()) != nil {
		t.Fatal("loopOf found a loop for the test goroutine")
	}
	r, err := New(Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- r.Run() }()
	var g uintptr
	var direct, viaMap *Reactor
	var inSlot bool
	onLoop(r, func() {
		g = goid.Current()
		direct = loopOf(g)
		// Another loop in the slot: loopOf falls back to the map.
		slot := loopSlot(g)
		if inSlot = slot.Load() == r; inSlot {
			other := &Reactor{os: &osLoop{loopID: g + 1}}
			slot.Store(other)
			viaMap = loopOf(g)
			slot.Store(r)
		}
	})
	if direct != r {
		t.Fatalf("loopOf on the loop: %p, want %p", direct, r)
	}
	if inSlot && viaMap != r {
		t.Fatalf("loopOf with the slot taken: %p, want %p", viaMap, r)
	}
	if !inSlot {
		t.Log("the loop's slot was taken by another test's loop: the map path only")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if s := loopSlot(g).Load(); s == r {
		t.Fatal("a closed loop left its slot set")
	}
	if loopOf(g) != nil {
		t.Fatal("loopOf found a closed loop")
	}
}

// TestLoopOfAfterIdentityReuse: the runtime reuses a goroutine's identity
// (its g) once it has exited. A goroutine that gets the identity of a loop
// goroutine whose Run returned finds no loop: the slot was cleared before
// Run returned, so a slot whose loopID matches the caller is always the
// caller's own running loop.
func TestLoopOfAfterIdentityReuse(t *testing.T) {
	r, err := New(Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- r.Run() }()
	var g uintptr
	onLoop(r, func() { g = goid.Current() })
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	reused := false
	for i := 0; i < 10000 && !reused; i++ {
		type seen struct {
			same bool
			loop *Reactor
		}
		ch := make(chan seen)
		go func() {
			me := goid.Current()
			ch <- seen{me == g, loopOf(me)}
		}()
		s := <-ch
		if s.loop != nil {
			t.Fatalf("a goroutine outside any loop found loop %p (identity reused: %v)", s.loop, s.same)
		}
		reused = s.same
	}
	if !reused {
		t.Log("the loop goroutine's identity was not reused here: loopOf checked on other goroutines only")
	}
}

// isLoop is true on a loop, in its slot and (simulated) out of it, and
// false for a goroutine whose hint bit is set without being a loop (an
// identity that once was a loop's, or that shares its bit): with every
// running loop in its slot, that answer comes without the loops map.
func TestIsLoopStaleHint(t *testing.T) {
	r, err := New(Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- r.Run() }()
	var onLoopSlot, offSlot, offCount, offCountSeen bool
	var inSlot bool
	onLoop(r, func() {
		g := goid.Current()
		onLoopSlot = isLoop(g)
		slot := loopSlot(g)
		if inSlot = slot.Load() == r; inSlot {
			// Another loop in the slot, this one counted off it, as Run
			// does when it finds its slot taken.
			slot.Store(&Reactor{os: &osLoop{loopID: g + 1}})
			loopsOffSlot.Add(1)
			offSlot = isLoop(g)
			loopsOffSlot.Add(-1)
			// Uncounted, the slot alone answers; but the count is the
			// process's, and a loop of another test still running off
			// its slot sends isLoop to the map, which rightly finds g.
			quiet := loopsOffSlot.Load() == 0
			offCount = isLoop(g)
			offCountSeen = quiet && loopsOffSlot.Load() == 0
			slot.Store(r)
		}
	})
	if !onLoopSlot {
		t.Fatal("isLoop false on the loop")
	}
	if inSlot && !offSlot {
		t.Fatal("isLoop false on a loop whose slot another loop holds")
	}
	if inSlot && offCountSeen && offCount {
		t.Fatal("isLoop true for a goroutine in no slot with no loop counted off its slot")
	}
	// A stale hint: the test goroutine's bit set, as a dead loop's
	// reused identity leaves it.
	me := goid.Current()
	markLoop(me)
	if isLoop(me) {
		t.Fatal("isLoop true for a goroutine that is no loop (stale hint bit)")
	}
	loopsOffSlot.Add(1)
	if isLoop(me) {
		t.Fatal("isLoop true for a goroutine that is no loop (map path)")
	}
	loopsOffSlot.Add(-1)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
}
