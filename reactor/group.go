package reactor

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/asyncsteps/asyncsteps/internal/goid"
)

// Group is a set of real reactors, one per CPU by default, started and
// closed together.
type Group struct {
	rs      []*Reactor
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
	g := &Group{rs: make([]*Reactor, 0, n), errs: make([]error, n)}
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
	return g.rs[(g.next.Add(1)-1)%uint64(len(g.rs))]
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
