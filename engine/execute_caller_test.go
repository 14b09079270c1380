package engine_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// The shape a Go program embeds the engine in (bench's RealSimple): a
// goroutine builds a root on a real reactor, executes it and waits on a
// channel its last step writes, not on a Promise. When the loop is parked
// the caller's Execute runs the flow's turn itself (reactor.X.PostRun):
// the steps run as the loop (IsSameThread, IsLoopGoroutine), Promise.Wait
// inside them is still refused, a timer a step arms from the caller fires
// on the loop and ends the flow, and many goroutines calling at once each
// get their own flow's result.
func TestExecuteFromAGoroutineRunsTheFlowAsTheLoop(t *testing.T) {
	sequential, all := callsAsTheLoop(t, false)
	if sequential == 0 && !pollingFallback {
		t.Fatal("no first step ran on its caller: Execute never ran a parked loop's turn")
	}
	t.Logf("%d of 200 sequential, %d of 800 concurrent first steps ran on their callers", sequential, all-sequential)
}

// Close racing goroutines whose Execute may be running the loops' turns:
// every flow executed ends (its Promise's Done closes), with its result or,
// when the reactor closed first, an error; Close returns and nothing
// hangs.
func TestExecuteFromGoroutinesRacingClose(t *testing.T) {
	for round := range 10 {
		g, err := reactor.NewGroup(2, reactor.Options{})
		if err != nil {
			t.Fatal(err)
		}
		g.Start()
		var wg sync.WaitGroup
		var ok, failed atomic.Int64
		stop := make(chan struct{})
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					root := engine.New(g.Next())
					root.Add(func(as *engine.Steps) {
						if (w+i)%3 == 0 {
							// Some flows are still waiting for a timer at Close.
							x := as.External()
							as.Reactor().Deferred(time.Millisecond, func() { x.Success() })
						}
					})
					p := root.Promise()
					select {
					case <-p.Done():
					case <-time.After(10 * time.Second):
						t.Error("a flow never ended")
						return
					}
					if _, err := p.Wait(); err != nil {
						failed.Add(1)
					} else {
						ok.Add(1)
					}
					root.Release()
				}
			}()
		}
		time.Sleep(time.Duration(round%4) * time.Millisecond)
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		close(stop)
		wg.Wait()
		if ok.Load() == 0 && round%4 != 0 {
			t.Logf("round %d: no flow ended with success before Close", round)
		}
	}
}
