//go:build linux

package engine_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// parked (engine.go) writes its hints into the step that parked parkAhead
// before, and into that step's flow, whenever that step's ctl word still
// matches; External.Success on the loop reads them back. For the race
// detector: roots built off the loop (their frames the spares of roots
// released before, so a stale ring slot's frame may be one a builder
// writes), plain steps, parallel branches and loop iterations that park,
// completed in the order they parked on the loop (the hints read), off
// the loop (xWriting), or canceled (disarm, cancelBranches), while other
// builders release and build again. Every flow must end with its value or
// Canceled, and nothing is left live.
func TestParkedHintsUnderRace(t *testing.T) {
	r, err := reactor.New(reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- r.Run() }()

	type park struct {
		x    engine.External
		root *engine.Steps
	}
	parks := make(chan park, 256)
	var wg sync.WaitGroup
	var succeeded, canceled atomic.Int64
	const workers, rounds, perRound = 3, 40, 12
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			roots := make([]*engine.Steps, perRound)
			ps := make([]*engine.Promise, perRound)
			for round := range rounds {
				for i := range roots {
					rt := engine.New(r)
					roots[i] = rt
					note := func(as *engine.Steps) { parks <- park{as.External(), rt} }
					switch (w + i + round) % 3 {
					case 0: // a plain step
						rt.Add(note)
					case 1: // two branches
						rt.Add(func(as *engine.Steps) {
							p := as.Parallel()
							p.Add(note)
							p.Add(note)
						})
					default: // a loop whose iteration's step parks, twice
						n := 0
						rt.Loop(func(as *engine.Steps) {
							if n++; n > 2 {
								as.Break()
								return
							}
							as.Add(note)
						})
					}
					rt.Add(func(as *engine.Steps) {})
					ps[i] = rt.Promise()
				}
				for i, p := range ps {
					var fe *engine.Error
					switch _, err := p.Wait(); {
					case err == nil:
						succeeded.Add(1)
					case errors.As(err, &fe) && fe.Code == engine.Canceled:
						canceled.Add(1)
					default:
						t.Errorf("worker %d flow %d: %v", w, i, err)
					}
					roots[i].Release()
				}
			}
		}()
	}
	done := make(chan struct{})
	var cwg sync.WaitGroup
	cwg.Add(1)
	go func() {
		// The completer: batches of parked steps, most completed on the
		// loop in the order they parked, some off the loop, some
		// canceled.
		defer cwg.Done()
		var batch []park
		k := 0
		flush := func() {
			b := batch
			batch = nil
			switch k++; k % 4 {
			case 0:
				for _, p := range b {
					p.x.Success(engine.Int(1)) // off the loop
				}
			case 1:
				for i, p := range b {
					if i%3 == 0 {
						p.root.Cancel()
					} else {
						p.x.Success(engine.Int(1))
					}
				}
			default:
				r.Immediate(func() {
					for _, p := range b {
						p.x.Success(engine.Int(1)) // on the loop: the hints read
					}
				})
			}
		}
		for {
			select {
			case p := <-parks:
				batch = append(batch, p)
				if len(batch) == 16 {
					flush()
				}
			case <-done:
				return
			case <-time.After(time.Millisecond):
				if len(batch) > 0 {
					flush()
				}
			}
		}
	}()
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(reactortest.Hang):
		t.Fatal("the flows never ended")
	}
	close(done)
	cwg.Wait()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-runErr; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if succeeded.Load() == 0 || canceled.Load() == 0 {
		t.Errorf("%d flows succeeded, %d canceled: want both", succeeded.Load(), canceled.Load())
	}
}
