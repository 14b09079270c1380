//go:build linux

package syncprim

import (
	"sync"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Flows on two real reactors that wait for an External finished by worker
// goroutines (which, while a loop is parked, run the flow on, on the
// worker, as engine's External does) and then take one Mutex
// shared by both reactors: a section entered on a worker hands the Mutex
// over from there (a plain borrow of the other reactor's word, never a
// turn inside the turn), one entered on a loop hands it over as before.
// Every section runs once, one at a time (the counter is unsynchronised
// but for the Mutex: the race detector checks the hand-overs' ordering),
// and every flow ends.
func TestWorkersCompleteIntoAMutex(t *testing.T) {
	const perReactor, rounds, workers = 8, 100, 4
	rs := []*reactor.Reactor{
		reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin}),
		reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin}),
	}
	m := NewMutex(1, 0)
	var inside, counter int // guarded by m
	exts := make(chan engine.External, 2*perReactor)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x := range exts {
				x.Success()
			}
		}()
	}
	var ps []*engine.Promise
	var roots []*engine.Steps
	for _, r := range rs {
		for range perReactor {
			root := engine.New(r)
			root.Repeat(rounds, func(as *engine.Steps, _ int) {
				as.Add(func(as *engine.Steps) {
					as.SetTimeout(reactortest.Hang)
					exts <- as.External()
				})
				as.Add(func(as *engine.Steps) {
					m.Sync(as, func(as *engine.Steps) {
						inside++
						if inside != 1 {
							as.Error("Overlap", "two sections at once")
							return
						}
						counter++
						inside--
					}, nil)
				})
			})
			ps = append(ps, root.Promise())
			roots = append(roots, root)
		}
	}
	deadline := time.After(2 * reactortest.Hang)
	for i, p := range ps {
		select {
		case <-p.Done():
		case <-deadline:
			t.Fatalf("flow %d never ended", i)
		}
		if _, err := p.Wait(); err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
	}
	close(exts)
	wg.Wait()
	if want := len(rs) * perReactor * rounds; counter != want {
		t.Fatalf("%d sections ran, want %d", counter, want)
	}
	for _, root := range roots {
		root.Release()
	}
}
