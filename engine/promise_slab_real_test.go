//go:build linux

package engine

import (
	"sync"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Many goroutines claim Promises from the same reactors' slabs at once
// (one atomic add each), some waiting through Done (whose channel the
// loop closes), all keeping their Promise and *Args past Release while
// the others reuse the pooled roots: each reads its own flow's result at
// the end, and the race detector sees the slab's publication, the claims
// and the loop's end ordered.
func TestPromiseSlabConcurrent(t *testing.T) {
	rs := []*reactor.Reactor{
		reactortest.Start(t, reactor.Options{CPU: -1}),
		reactortest.Start(t, reactor.Options{CPU: -1}),
	}
	const goroutines, flows = 8, 200
	kept := make([][]keptResult, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range flows {
				n := int64(g*1000 + i)
				root := New(rs[(g+i)%2])
				root.Add(resultStep(n))
				p := root.Promise()
				if i%3 == 0 {
					select {
					case <-p.Done():
					case <-time.After(reactortest.Hang):
						t.Errorf("flow %d did not end", n)
						return
					}
				}
				a, err := p.Wait()
				if err != nil || a.At(0).Int() != n {
					t.Errorf("goroutine %d flow %d: %v %v", g, n, a, err)
					return
				}
				root.Release()
				kept[g] = append(kept[g], keptResult{p: p, args: a, n: n, s: a.At(1).Str()})
			}
		}()
	}
	wg.Wait()
	seen := map[*Promise]bool{}
	for _, ks := range kept {
		for _, k := range ks {
			if seen[k.p] {
				t.Fatalf("flow %d: a Promise handed out twice", k.n)
			}
			seen[k.p] = true
			k.check(t, "after every goroutine's later flows")
		}
	}
}
