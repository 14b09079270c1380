//go:build linux

package engine_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Loops on a real reactor whose iterations park on an External that other
// goroutines complete (the loop parked: the finisher applies it under the
// borrowed word; the loop running: the mailbox), with each iteration's
// frames kept for the next: the previous iteration's External, tried
// again, completes nothing, every value arrives in order, and every frame
// is given back. Roots are executed from goroutines (the caller may run
// the parked loop's turn) and released off the loop, again and again.
func TestLoopKeptFramesExternalsFromGoroutinesReal(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	const flows, rounds, iters = 4, 30, 20
	var wg sync.WaitGroup
	errs := make(chan string, flows)
	for g := 0; g < flows; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			xs := make(chan engine.External, 1)
			for round := 0; round < rounds; round++ {
				root := engine.New(r)
				var sum int64
				i := 0
				root.Loop(func(as *engine.Steps) {
					if i == iters {
						as.Break()
						return
					}
					i++
					as.Add(func(as *engine.Steps) { xs <- as.External() })
					as.Add(func(as *engine.Steps) { sum += as.Args().At(0).Int() })
					as.Add(func(as *engine.Steps) {})
				})
				p := root.Promise()
				root.Execute()
				var prev engine.External
				for k := 1; k <= iters; k++ {
					var x engine.External
					select {
					case x = <-xs:
					case <-time.After(reactortest.Hang):
						errs <- fmt.Sprintf("flow %d round %d: iteration %d never parked", g, round, k)
						return
					}
					if k > 1 && prev.Success(engine.Int(1000)) {
						errs <- fmt.Sprintf("flow %d round %d: iteration %d's External completed iteration %d", g, round, k-1, k)
						return
					}
					if !x.Success(engine.Int(int64(k))) {
						errs <- fmt.Sprintf("flow %d round %d: iteration %d's External was refused", g, round, k)
						return
					}
					prev = x
				}
				if _, err := realWait(t, p, "loop"); err != nil {
					errs <- fmt.Sprintf("flow %d round %d: %v", g, round, err)
					return
				}
				if want := int64(iters * (iters + 1) / 2); sum != want {
					errs <- fmt.Sprintf("flow %d round %d: sum %d, want %d", g, round, sum, want)
					return
				}
				if prev.Success(engine.Int(1000)) {
					errs <- fmt.Sprintf("flow %d round %d: the last External completed again", g, round)
					return
				}
				root.Release()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	var st engine.Stats
	onRealLoop(t, r, func() { st = engine.StatsOf(r) })
	if st.FramesLive != 0 || st.FlowsLive != 0 || st.RootsLive != 0 {
		t.Fatalf("FramesLive %d FlowsLive %d RootsLive %d after every flow ended, want 0", st.FramesLive, st.FlowsLive, st.RootsLive)
	}
}

// Roots on a real reactor run a loop in two parallel branches, each
// iteration parked on an External, and are canceled from another goroutine
// (through a Ref, which must not reach the root's next owner) mid-loop,
// then released and made again from the loop's pool: every kept frame,
// branch and root is given back, a Ref of a released root cancels
// nothing, and no External of a canceled run completes anything.
func TestLoopCanceledInBranchesReusesRootsReal(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	const rounds = 60
	xs := make(chan engine.External, 4)
	var stale []engine.Ref
	var staleX []engine.External
	for round := 0; round < rounds; round++ {
		var root *engine.Steps
		var p *engine.Promise
		made := make(chan struct{})
		r.Immediate(func() { // New and Execute on the loop: the loop's ring of roots
			defer close(made)
			root = engine.New(r)
			par := root.Parallel()
			for b := 0; b < 2; b++ {
				par.Loop(func(as *engine.Steps) {
					as.Add(func(as *engine.Steps) { xs <- as.External() })
					as.Add(func(as *engine.Steps) {})
				})
			}
			p = root.Promise() // executes it
		})
		<-made
		ref := root.Ref()
		// A few iterations of each branch, then the cancel.
		for k := 0; k < 6; k++ {
			var x engine.External
			select {
			case x = <-xs:
			case <-time.After(reactortest.Hang):
				t.Fatalf("round %d: no branch parked", round)
			}
			if k < 4 {
				if !x.Success() {
					t.Fatalf("round %d: an External was refused", round)
				}
			} else {
				staleX = append(staleX, x)
			}
		}
		for _, old := range stale {
			if old.Cancel() {
				t.Fatalf("round %d: a Ref of a released root canceled a run", round)
			}
		}
		if !ref.Cancel() {
			t.Fatalf("round %d: the Ref of the running root did not cancel it", round)
		}
		if _, err := realWait(t, p, "canceled"); err == nil {
			t.Fatalf("round %d: a canceled root succeeded", round)
		}
		for _, x := range staleX {
			if x.Success() {
				t.Fatalf("round %d: an External of a canceled run completed", round)
			}
		}
		staleX = staleX[:0]
		// Drain what a branch parked after the cancel was asked.
		for len(xs) > 0 {
			if x := <-xs; x.Success() {
				t.Fatalf("round %d: an External of a canceled run completed", round)
			}
		}
		released := make(chan struct{})
		r.Immediate(func() { root.Release(); close(released) })
		<-released
		stale = append(stale, ref)
	}
	var st engine.Stats
	onRealLoop(t, r, func() { st = engine.StatsOf(r) })
	if st.FramesLive != 0 || st.FlowsLive != 0 || st.RootsLive != 0 {
		t.Fatalf("FramesLive %d FlowsLive %d RootsLive %d after every root was released, want 0", st.FramesLive, st.FlowsLive, st.RootsLive)
	}
}
