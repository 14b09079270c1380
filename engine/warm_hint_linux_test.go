//go:build linux

package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// TestEngineWarmHint: an engine attached to a reactor of a group of
// sixteen holds the hint New and Release ask for (the next reactor's
// lines: reactor/warm.go); one on a group of two holds the zero hint, and
// New and Release there ask for nothing. Roots started round the large
// group from a goroutine all end (the hint changes nothing).
func TestEngineWarmHint(t *testing.T) {
	for _, c := range []struct {
		n    int
		hint bool
	}{{2, false}, {16, true}} {
		g, err := reactor.NewGroup(c.n, reactor.Options{CPU: -1})
		if err != nil {
			t.Fatal(err)
		}
		g.Start()
		roots := make([]*Steps, 4*c.n)
		ps := make([]*Promise, len(roots))
		for i := range roots {
			roots[i] = New(g.Next())
			roots[i].Add(func(as *Steps) { as.Success(Int(int64(i))) })
			ps[i] = roots[i].Promise()
		}
		for i := range roots {
			args, err := ps[i].Wait()
			if err != nil || args.At(0).Int() != int64(i) {
				t.Fatalf("%d reactors: flow %d ended with %v, %v", c.n, i, args, err)
			}
			roots[i].Release()
		}
		for i, r := range g.Reactors() {
			e := engineOf(r)
			e.rootMu.Lock()
			h := e.warm
			e.rootMu.Unlock()
			if got := h != (reactor.WarmHint{}); got != c.hint {
				t.Fatalf("%d reactors: reactor %d's engine holds a hint: %v, want %v", c.n, i, got, c.hint)
			}
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
