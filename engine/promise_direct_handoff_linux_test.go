//go:build linux && !race

package engine

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A step hands its root to another goroutine, which ReleaseAtEnd's it
// (safe from any goroutine that holds the root) while the flow ends in
// Promise's direct start. releaseAfterRun stores releaseAtEnd then looks
// at the run word; the end clears the run word then looks at
// releaseAtEnd: a Dekker pair, which needs a full fence on each side, or
// both sides miss each other and nobody releases the root. Without the
// race detector only (under it every store here is atomic).
func TestPromiseDirectStartReleaseAtEndHandedOff(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin})
	if !waitParked(r, 2*time.Second) {
		t.Skip("the loop never parks (the Polling fallback): Promise never runs a turn")
	}
	n := 5000 // about 1 in 100 leaked without the fence (2 vCPUs)
	if testing.Short() {
		n = 1000
	}
	var go2 atomic.Pointer[Steps]
	var spin atomic.Uint32
	done := make(chan struct{})
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			var root *Steps
			for root = go2.Load(); root == nil; root = go2.Load() {
				select {
				case <-stop:
					return
				default:
				}
			}
			go2.Store(nil)
			for i := spin.Load(); i > 0; i-- {
			}
			root.ReleaseAtEnd()
			done <- struct{}{}
		}
	}()
	direct, leaked := 0, 0
	for i := range n {
		waitParked(r, reactortest.Hang)
		me := goid.Current()
		onCaller := false
		spin.Store(uint32(i % 64))
		root := New(r)
		root.Add(func(as *Steps) {
			onCaller = goid.Current() == me
			go2.Store(root)
			as.Success()
		})
		p := root.Promise()
		<-done
		if onCaller {
			direct++
		}
		if _, err := p.Wait(); err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
		// Direct: the end ran on this goroutine inside Promise, and the
		// other's ReleaseAtEnd has returned: whoever was to release the
		// root has. (Through the loop the release may still be on its
		// way after Wait: not checked.)
		if onCaller && !rootOf(root).isReleased() && !rootOf(root).running() {
			leaked++
			root.Release()
		}
	}
	t.Logf("%d of %d direct starts, %d roots left unreleased", direct, n, leaked)
	if leaked != 0 {
		t.Fatalf("%d of %d roots, ReleaseAtEnd'd by another goroutine while their flows ended, were never released", leaked, n)
	}
}
