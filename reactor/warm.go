package reactor

import (
	"sync/atomic"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/prefetch"
)

// A goroutine that starts flows round robin over a group (Group.Next,
// then engine.New, Promise and Execute's direct start: the FanOut row)
// meets each reactor again only a round later. With two reactors a round
// is two flows and that reactor's lines are still in L1; with sixteen,
// the sixteen flows between two visits have evicted them, and New's
// first loads (the attachment slot, the engine's root pool lock) and
// Promise's (the engine's Promise slab) each wait for L2 (perf, FanOut
// at 16 reactors against 2 on two CPUs: New +69% samples, Promise
// +68%). Next therefore asks for the next reactor's few lines on that
// path one start ahead (warmNext): one prefetch.Lines call of four
// hints, which never fault and change nothing. Eighteen lines (every
// line X.RunParked and the turn touch) measured worse: the hints
// themselves stalled on the line-fill buffers.

// warmFrom is the group size from which Next warms the next reactor:
// below it a round's lines stay in L1 (the 16-core table: FanOut per
// flow 308 ns at 2 reactors and at 8, 359 at 16).
const warmFrom = 4

// warmSet is the four addresses warmNext asks for: the reactor's
// attachment and loop word line, its attachment slot, and two lines the
// attached layer gave (X.SetWarm). A group keeps its reactors' sets side
// by side (Group.warm), so that warmNext's own loads stay in L1: the
// caller reads them every start. Each address is stored and loaded
// atomically (SetWarm runs on whichever goroutine attaches the layer); a
// nil one is skipped by the hint (a prefetch of address 0 is a no-op that
// never faults).
type warmSet [4]atomic.Pointer[byte]

// warmNext asks for the warm set of the reactor after rs[i].
func (g *Group) warmNext(i uint64) {
	j := i + 1
	if j == uint64(len(g.rs)) {
		j = 0
	}
	w := &g.warm[j]
	prefetch.Lines(unsafe.Pointer(w[0].Load()), unsafe.Pointer(w[1].Load()), unsafe.Pointer(w[2].Load()), unsafe.Pointer(w[3].Load()))
}

// SetWarm gives r's warm set the two lines of the layer attached to r
// that a goroutine's start of a flow on r waits for first (the engine:
// its shared root pool's lock, its Promise slab pointer), beside r's
// attachment slot. Call it after the layer attached (ExtOrInit
// returned). A hint for Group.Next only: nothing is read or written
// through the addresses. Safe from any goroutine; a reactor outside any
// group has no set, and SetWarm does nothing.
func (internals) SetWarm(r *Reactor, a, b unsafe.Pointer) {
	w := r.warm
	if w == nil {
		return
	}
	w[1].Store((*byte)(unsafe.Pointer(r.ext.Load())))
	w[2].Store((*byte)(a))
	w[3].Store((*byte)(b))
}
