package engine_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// External claimed off the loop during the callback, then the step adds
// sub-steps: Error reported accepted (true) but silently dropped; on the
// loop the same sequence fails the flow.
func TestRegressClaimedErrorDroppedBySubSteps(t *testing.T) {
	for _, off := range []bool{true, false} {
		r := reactor.NewManual()
		root := engine.New(r)
		var ok bool
		root.Add(func(as *engine.Steps) {
			ext := as.External()
			if off {
				var wg sync.WaitGroup
				wg.Add(1)
				go func() { ok = ext.Error("Boom"); wg.Done() }()
				wg.Wait()
			} else {
				ok = ext.Error("Boom")
			}
			as.Add(func(as *engine.Steps) {})
		})
		p := root.Promise()
		r.RunUntilIdle()
		_, err := p.Wait()
		var fe *engine.Error
		if !ok || !errors.As(err, &fe) || fe.Code != "Boom" {
			t.Fatalf("off=%v: Error()=%v, flow err=%v; want true and Boom either way", off, ok, err)
		}
	}
}

// A live accessor used off the loop, while its step runs: the call is
// dropped (the step goes on) without reading loop state such as e.cur.
// The step waits for the call, so the frame cannot be recycled under it: a
// stale accessor used from another goroutine reads memory the loop reuses,
// like any use after free, and is not covered.
func TestRegressOffLoopAccessorRace(t *testing.T) {
	r, _ := reactortest.StartRun(t, reactor.Options{CPU: -1})
	defer r.Close()
	for _, op := range []string{"Add", "Arg", "Args"} {
		root := engine.New(r)
		done := make(chan struct{})
		root.Add(func(as *engine.Steps) {
			go func() {
				defer close(done)
				switch op {
				case "Add":
					as.Add(func(*engine.Steps) {})
				case "Arg":
					as.Arg(0)
				case "Args":
					as.Args()
				}
			}()
			<-done
		})
		root.Repeat(100, func(as *engine.Steps, i int) {})
		p := root.Promise()
		if _, err := p.Wait(); err != nil {
			t.Errorf("%s off the loop failed the flow: %v", op, err)
		}
	}
}

// Execute off the loop, Cancel from other goroutines, Release: no hang, no leak.
func TestRegressExecCancelStress(t *testing.T) {
	r, _ := reactortest.StartRun(t, reactor.Options{CPU: -1, RingSize: 8})
	defer r.Close()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				root := engine.New(r)
				root.Add(func(as *engine.Steps) {
					as.SetCancel(func(*engine.Steps) {})
					as.SetTimeout(time.Millisecond)
				}, func(as *engine.Steps, code string) {})
				p := root.Promise()
				c := make(chan struct{})
				go func() { root.Cancel(); close(c) }()
				if i%3 == 0 {
					root.Cancel()
				}
				select {
				case <-p.Done():
				case <-time.After(5 * time.Second):
					t.Error("hang")
					return
				}
				<-c
				if i%2 == 0 {
					root.Add(func(*engine.Steps) {})
					p2 := root.Promise()
					root.Cancel()
					<-p2.Done()
				}
				root.Release()
			}
		}()
	}
	wg.Wait()
	st := make(chan engine.Stats)
	r.Immediate(func() { st <- engine.EngineStats(r) })
	s := <-st
	if s.FramesLive != 0 || s.RootsLive != 0 || s.FlowsLive != 0 {
		t.Fatalf("%+v", s)
	}
}
