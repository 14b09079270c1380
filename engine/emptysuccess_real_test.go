//go:build linux

package engine_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Empty successes (External.Success() with no values) from other
// goroutines on a real reactor, two racing per step, while the loop is
// sometimes parked (the result applied under the borrowed word) and
// sometimes busy with a callback (posted through the mailbox): exactly
// one completion wins, and the next step sees no
// values although the step before left three. Roots are released and
// reused, so kept flows go through many such ends.
func TestRealEmptySuccessFromOtherGoroutines(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	const rounds, n = 4, 200
	for round := range rounds {
		type res struct {
			p      *engine.Promise
			root   *engine.Steps
			sawN   atomic.Int32 // values the third step saw, +1 (0: it never ran)
			second atomic.Int32 // completions that reported true
		}
		rs := make([]*res, n)
		var finishers sync.WaitGroup
		for i := range rs {
			x := &res{}
			rs[i] = x
			x.root = engine.New(r)
			x.root.Add(func(as *engine.Steps) { as.Success(engine.Int(1), engine.Str("two"), engine.Int(3)) })
			x.root.Add(func(as *engine.Steps) {
				ext := as.External()
				for range 2 {
					finishers.Add(1)
					go func() {
						defer finishers.Done()
						time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
						if ext.Success() {
							x.second.Add(1)
						}
					}()
				}
				if i%4 == 0 {
					// Keep the loop busy for a while: completions meanwhile
					// find it running and post.
					time.Sleep(50 * time.Microsecond)
				}
			})
			x.root.Add(func(as *engine.Steps) { x.sawN.Store(int32(as.Args().Len()) + 1) })
			x.p = x.root.Promise()
		}
		for i, x := range rs {
			args, err := realWait(t, x.p, fmt.Sprint("round ", round, " flow ", i))
			wantNoErr(t, err)
			if got := x.sawN.Load(); got != 1 {
				t.Fatalf("round %d flow %d: the step after an empty success saw %d values (want 0; -1: never ran)", round, i, got-1)
			}
			if args.Len() != 0 {
				t.Fatalf("round %d flow %d: the flow ended with %d values", round, i, args.Len())
			}
		}
		finishers.Wait()
		for i, x := range rs {
			if c := x.second.Load(); c != 1 {
				t.Fatalf("round %d flow %d: %d completions reported true, want exactly 1", round, i, c)
			}
			x.root.Release()
		}
	}
}

// An empty success races a Cancel from another goroutine: the flow ends
// either way, the next step runs only on a success, and the cancel handler
// runs at most once.
func TestRealEmptySuccessRacesCancel(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	const n = 400
	canceled, succeeded := 0, 0
	for i := range n {
		var handlerRuns, nextRuns atomic.Int32
		extCh := make(chan engine.External, 1)
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			as.SetCancel(func(*engine.Steps) { handlerRuns.Add(1) })
			extCh <- as.External()
		})
		root.Add(func(as *engine.Steps) { nextRuns.Add(1) })
		p := root.Promise()
		ext := <-extCh
		var wg sync.WaitGroup
		var accepted atomic.Bool
		wg.Add(2)
		go func() { defer wg.Done(); accepted.Store(ext.Success()) }()
		go func() { defer wg.Done(); root.Cancel() }()
		wg.Wait()
		_, err := realWait(t, p, "race")
		if h := handlerRuns.Load(); h > 1 {
			t.Fatalf("flow %d: cancel handler ran %d times", i, h)
		}
		switch codeOf(err) {
		case "":
			succeeded++
			if nextRuns.Load() != 1 || !accepted.Load() {
				t.Fatalf("flow %d succeeded with the next step run %d times, External reported %v", i, nextRuns.Load(), accepted.Load())
			}
		case engine.Canceled:
			canceled++
			if nextRuns.Load() > 1 {
				t.Fatalf("flow %d: next step ran %d times", i, nextRuns.Load())
			}
			if !accepted.Load() && handlerRuns.Load() != 1 {
				t.Fatalf("flow %d canceled while its step waited (External refused), cancel handler ran %d times", i, handlerRuns.Load())
			}
		default:
			t.Fatalf("flow %d ended with %v", i, err)
		}
		root.Release()
	}
	t.Logf("%d succeeded, %d canceled", succeeded, canceled)
}
