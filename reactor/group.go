package reactor

import (
	"errors"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/asyncsteps/asyncsteps/internal/goid"
)

// Group is a set of real reactors, one per CPU by default, started and
// closed together.
type Group struct {
	rs []*Reactor
	// pick is Next's modulo by len(rs) without a division: 2^64/len(rs)
	// rounded up (nextIndex). A 64-bit DIV is 35-88 cycles on this
	// project's Xeons, more than the rest of Next, on every Next of a
	// fan-out (profiles/notes/2026-11-28-fan6-round14.md).
	pick    uint64
	next    atomic.Uint64
	wg      sync.WaitGroup
	errs    []error
	started atomic.Bool // Start's: a second Start panics
}

// NewGroup makes n reactors (n <= 0: one per CPU). With opts.Pin, reactor
// i is pinned to CPU (opts.CPU + i) modulo the number of CPUs; without it
// none is pinned. An option New refuses is an error.
//
// Nothing runs until Start: a flow executed on one of the reactors before
// then waits for it (its Promise.Wait blocks until Start), as on a reactor
// from New before its Run.
func NewGroup(n int, opts Options) (*Group, error) {
	ncpu := runtime.NumCPU()
	if n <= 0 {
		n = ncpu
	}
	g := &Group{rs: make([]*Reactor, 0, n), errs: make([]error, n), pick: pickMagic(n)}
	for i := 0; i < n; i++ {
		o := opts
		if opts.Pin && opts.CPU >= 0 {
			o.CPU = (opts.CPU + i) % ncpu
		}
		r, err := New(o)
		if err != nil {
			for _, r := range g.rs {
				_ = r.Close()
			}
			return nil, err
		}
		g.rs = append(g.rs, r)
	}
	return g, nil
}

// Start runs every reactor's loop on its own goroutine. It is called once;
// a second call panics (its loops' "Run called twice" errors would be lost
// behind the first loops' results).
func (g *Group) Start() {
	if !g.started.CompareAndSwap(false, true) {
		panic("reactor: Group.Start called twice")
	}
	for i, r := range g.rs {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			g.errs[i] = r.Run()
		}()
	}
}

// Close closes every reactor and waits for their loops to end. It returns
// the loops' errors joined (nil after a clean shutdown).
func (g *Group) Close() error {
	for _, r := range g.rs {
		_ = r.Close()
	}
	g.wg.Wait()
	return errors.Join(g.errs...)
}

// Next picks a reactor round-robin. Safe from any goroutine.
func (g *Group) Next() *Reactor {
	return g.rs[nextIndex(g.next.Add(1)-1, g.pick, uint64(len(g.rs)))]
}

// pickMagic is nextIndex's multiplier for n reactors: 2^64/n rounded up
// (0 for n = 1, which nextIndex's product then maps to 0, as it should).
func pickMagic(n int) uint64 { return ^uint64(0)/uint64(n) + 1 }

// nextIndex is the low 32 bits of the count i modulo n (n < 2^32), by
// two multiplications instead of a division (Lemire, Kaser and Kurz,
// "Faster remainder by direct computation", 2019: exact for every
// 32-bit i and n with magic = pickMagic(n)). Next's count is 64 bits;
// taking its low 32 bits keeps the order round-robin except once every
// 2^32 picks, when a group whose size is not a power of two starts the
// cycle over early: after reactor 2^32 mod n - 1 comes reactor 0, and the
// n - 2^32 mod n reactors from 2^32 mod n on are each skipped once.
func nextIndex(i, magic, n uint64) uint64 {
	hi, _ := bits.Mul64(magic*uint64(uint32(i)), n)
	return hi
}

// Current returns the reactor whose loop is the calling goroutine, or nil.
// Inside a turn that a loop runs for another parked reactor of the group
// (a hand-off: reactor/doc.go) the goroutine is the loop of both, and
// Current returns the first of them in group order: a step that needs its
// own reactor asks its accessor (engine's Steps.Reactor) instead.
func (g *Group) Current() *Reactor {
	me := goid.Current()
	for _, r := range g.rs {
		if r.loopG.Load() == me {
			return r
		}
	}
	return nil
}

// Reactors returns the group's reactors, in order. Do not modify the slice.
func (g *Group) Reactors() []*Reactor { return g.rs }

// Len returns the number of reactors.
func (g *Group) Len() int { return len(g.rs) }
