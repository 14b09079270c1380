//go:build linux

package engine_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// CONTRACT.md, "Order": roots start in the order of their Execute calls.
// Off the loop an Execute may start its root at once on the caller (a
// parked loop: X.RunParked), or post it for the loop (PostRun's ring, or
// Post) where the task may again start it at once (startRootNow) or queue
// it (anything but a plain pooled root, or flows ready ahead of it). Here
// two goroutines take turns executing roots of every kind (plain, with a
// context, named, waited for by a Promise, with an OnEnd, pooled and
// reused), each Execute returning before the next begins, and the first
// steps must run in that order whichever way each start went.
func TestRootsStartInExecuteOrderAcrossGoroutinesOnARealLoop(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin})
	const n = 600
	var mu sync.Mutex
	got := make([]int, 0, n)
	done := make(chan struct{})
	first := func(i int) func(as *engine.Steps) {
		return func(as *engine.Steps) {
			mu.Lock()
			got = append(got, i)
			last := len(got) == n
			mu.Unlock()
			if last {
				close(done)
			}
			as.Success()
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	name := engine.NewName("order")
	kept := engine.New(r) // re-executed once its last run has ended
	keptIdle := make(chan struct{}, 1)
	keptIdle <- struct{}{}
	engine.X.OnEnd(kept, func(*engine.Steps, string) { keptIdle <- struct{}{} })
	var rootsMu sync.Mutex
	var roots []*engine.Steps
	keep := func(root *engine.Steps) {
		rootsMu.Lock()
		roots = append(roots, root)
		rootsMu.Unlock()
	}
	defer func() {
		select {
		case <-done:
		default:
			return // failed: Close ends what is left
		}
		for _, root := range roots {
			root.Release()
		}
	}()
	execute := func(i int) {
		if i%7 == 6 {
			select {
			case <-keptIdle:
				kept.Add(first(i))
				kept.Add(func(as *engine.Steps) { as.Success() })
				kept.Execute()
				return
			default:
			}
		}
		root := engine.New(r)
		root.Add(first(i))
		root.Add(func(as *engine.Steps) { as.Success() })
		switch i % 7 {
		case 1:
			root.SetContext(ctx)
		case 2:
			root.SetFlowName(name)
		case 3:
			_ = root.Promise() // executes
			keep(root)
			return
		case 4:
			engine.X.OnEnd(root, func(*engine.Steps, string) {})
		case 5:
			engine.X.DeferStart(root, true) // on the loop only; off it a plain start
		}
		root.Execute()
		keep(root) // released once every flow has started: a Release now would cancel it
	}
	turn := [2]chan int{make(chan int, 1), make(chan int, 1)}
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range turn[w] {
				if i%5 == 0 {
					startParked(r) // the direct start as often as the scheduler allows
				}
				execute(i)
				if i+1 == n {
					close(turn[0])
					close(turn[1])
					return
				}
				turn[1-w] <- i + 1
			}
		}()
	}
	turn[0] <- 0
	wg.Wait()
	select {
	case <-done:
	case <-time.After(reactortest.Hang):
		mu.Lock()
		started := len(got)
		mu.Unlock()
		t.Fatalf("%d of %d flows started", started, n)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, v := range got {
		if v != i {
			t.Fatalf("start %d was Execute %d's (order %v...)", i, v, got[max(0, i-3):min(len(got), i+4)])
		}
	}
}

// A callback on one loop executes two roots, a then b, on another
// reactor whose loop is parked: both starts go into that reactor's ring
// (a loop may not take another loop's word) and one turn takes them in
// order. a's first step then executes c on its own loop.
// b's Execute returned before c's was called, so b must start before c:
// a start task taken from a ring may not run its flow's steps ahead of
// the start tasks behind it, or c, readied by a's step, would overtake b.
func TestRingStartsKeepExecuteOrderAgainstRootsTheirStepsExecute(t *testing.T) {
	r1 := reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin})
	r2 := reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin})
	for round := range 20 {
		var mu sync.Mutex
		var got []string
		var bDone atomic.Bool
		checked := false
		log := func(s string) {
			mu.Lock()
			got = append(got, s)
			mu.Unlock()
		}
		done := make(chan struct{})
		c := engine.New(r2)
		c.Add(func(as *engine.Steps) { log("c"); close(done); as.Success() })
		b := engine.New(r2)
		b.Add(func(as *engine.Steps) { log("b"); as.Success() })
		a := engine.New(r2)
		a.Add(func(as *engine.Steps) {
			log("a")
			mu.Lock()
			checked = bDone.Load() // b's Execute returned before c's call
			mu.Unlock()
			c.Execute()
			as.Success()
		})
		startParked(r2)
		// A timer callback, run by r1's loop thread: its posts to the
		// parked r2 leave r2 asleep, and r1 runs r2's turn after the
		// callback (the hand-off), so both start tasks are in r2's ring
		// when that turn takes them.
		r1.Deferred(time.Millisecond, func() {
			a.Execute()
			b.Execute()
			bDone.Store(true)
		})
		select {
		case <-done:
		case <-time.After(reactortest.Hang):
			t.Fatal("c never ran")
		}
		mu.Lock()
		order, wasChecked := append([]string(nil), got...), checked
		mu.Unlock()
		if wasChecked && (len(order) < 3 || order[1] != "b") {
			t.Fatalf("round %d: start order %v: c, executed after b's Execute returned, started before b", round, order)
		}
		for _, s := range []*engine.Steps{a, b, c} {
			s.Release()
		}
	}
}
