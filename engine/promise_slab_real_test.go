//go:build linux

package engine

import (
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
	kept, done := claimKept(t, 8, 200,
		func(g, i int) *reactor.Reactor { return rs[(g+i)%2] },
		func(p *Promise, i int, n int64) bool {
			if i%3 != 0 {
				return true
			}
			select {
			case <-p.Done():
				return true
			case <-time.After(reactortest.Hang):
				t.Errorf("flow %d did not end", n)
				return false
			}
		})
	<-done
	checkKept(t, kept, "after every goroutine's later flows")
}
