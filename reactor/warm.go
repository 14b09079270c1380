package reactor

import (
	"sync/atomic"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/prefetch"
)

// A goroutine that starts flows round robin over a group (Group.Next or
// its Reactors in turn, then engine.New, Promise and Execute's direct
// start: the FanOut, RealParallel and RealSimple rows) meets each reactor
// again only a round later. With two reactors a round is two flows and
// the reactor's lines are still in L1; with sixteen, the flows between
// two visits have evicted them, and New's first loads (the attachment
// slot, the engine's root pool lock) and Promise's (the engine's Promise
// slab pointer) each wait for L2 (perf, FanOut at 16 reactors against 2
// on two CPUs: New +69% samples, Promise +68%). So the attached layer
// asks, on each start and release from a goroutine on a reactor, for
// those lines of the reactor after it in its group (X.Warm): one
// prefetch.Lines call of four hints, which never fault and change
// nothing. Eighteen lines (every line X.RunParked and the turn touch)
// measured worse: the hints themselves stalled on the line-fill buffers.

// warmFrom is the group size from which a group's reactors get warm sets:
// below it a round is two or three flows and their lines stay in L1, and
// New and Release pay one test for the zero hint (the 16-core table grew
// between 8 and 16 reactors: FanOut per flow 308 ns at 2 and at 8, 359 at
// 16; 4 is where the hint is cheap beside a round's misses).
const warmFrom = 4

// warmSet is the four addresses X.Warm asks for: the reactor's
// attachment and loop word line, its attachment slot, and two lines the
// attached layer gave (X.SetWarm). A group keeps its reactors' sets side
// by side (Group.warm), so that the hint's own loads stay in L1: a
// fan-out's caller reads them every start. Each address is stored and
// loaded atomically (SetWarm runs on whichever goroutine attaches the
// layer); a nil one is skipped by the hint (a prefetch of address 0 is a
// no-op that never faults).
type warmSet [4]atomic.Pointer[byte]

// WarmHint names the lines to ask for before work on a reactor: the warm
// set of the reactor after the one X.SetWarm was given, in its group. The
// zero WarmHint (a reactor outside any group of warmFrom or more) asks
// for nothing.
type WarmHint struct{ s *warmSet }

// SetWarm gives r's warm set the two lines of the layer attached to r
// that a goroutine's start of a flow on r waits for first (the engine:
// its shared root pool's lock, its Promise slab pointer), beside r's
// attachment slot, and returns the hint for the reactor after r in its
// group, for the layer to pass to Warm. Call it after the layer attached
// (ExtOrInit returned). Nothing is read or written through the
// addresses. Safe from any goroutine; a reactor outside a group of
// warmFrom or more has no set: SetWarm does nothing and returns the zero
// hint.
func (internals) SetWarm(r *Reactor, a, b unsafe.Pointer) WarmHint {
	w := r.warm
	if w == nil {
		return WarmHint{}
	}
	w[1].Store((*byte)(unsafe.Pointer(r.ext.Load())))
	w[2].Store((*byte)(a))
	w[3].Store((*byte)(b))
	return WarmHint{r.warmAfter}
}

// Warm asks for the lines h names (nothing for the zero hint). A hint:
// it never faults, blocks or changes anything. Inlined: the zero hint
// costs a test.
func (internals) Warm(h WarmHint) {
	if h.s != nil {
		h.s.ask()
	}
}

// ask prefetches the set's four lines.
func (w *warmSet) ask() {
	prefetch.Lines(unsafe.Pointer(w[0].Load()), unsafe.Pointer(w[1].Load()), unsafe.Pointer(w[2].Load()), unsafe.Pointer(w[3].Load()))
}

// makeWarm gives a group of warmFrom reactors or more its warm sets, side
// by side, and each reactor its own and its successor's (round robin:
// the last one's is the first's). Before the group is returned.
func (g *Group) makeWarm() {
	n := len(g.rs)
	if n < warmFrom {
		return
	}
	g.warm = make([]warmSet, n)
	for i, r := range g.rs {
		g.warm[i][0].Store((*byte)(unsafe.Pointer(&r.ext))) // the attachment and the loop word
		r.warm, r.warmAfter = &g.warm[i], &g.warm[(i+1)%n]
	}
}
