package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

const waitPanic = "Promise.Wait on the loop's own goroutine"

// Wait on the goroutine that drives a manual reactor,
// for a flow that has not ended, panics with a message instead of
// deadlocking.
func TestPromiseWaitOnManualDriverPanics(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	var x engine.External
	root.Add(func(as *engine.Steps) { x = as.External() })
	p := root.Promise()
	r.RunUntilIdle()
	func() {
		defer func() {
			v := recover()
			if s, _ := v.(string); !strings.Contains(s, waitPanic) {
				t.Fatalf("recovered %v, want a panic naming the deadlock", v)
			}
		}()
		_, _ = p.Wait()
		t.Fatal("Wait returned")
	}()
	// Once the flow has ended, Wait on the same goroutine is fine.
	x.Success(engine.Int(3))
	r.RunUntilIdle()
	if args, err := p.Wait(); err != nil || args.At(0).Int() != 3 {
		t.Fatalf("%v %v", args, err)
	}
	// Another goroutine driving: Wait here blocks until it has.
	root2 := engine.New(r)
	root2.Add(func(as *engine.Steps) {})
	p2 := root2.Promise()
	done := make(chan struct{})
	go func() { r.RunUntilIdle(); close(done) }()
	<-done
	if _, err := p2.Wait(); err != nil {
		t.Fatal(err)
	}
}

// Inside a step, on a manual or a real reactor: the panic fails that step
// (a panic in a callback is InternalError), never a silent deadlock.
func TestPromiseWaitInsideStepFailsTheStep(t *testing.T) {
	rr, err := reactor.New(reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = rr.Run() }()
	defer rr.Close()
	for _, r := range []*reactor.Reactor{reactor.NewManual(), rr} {
		other := engine.New(r)
		other.Add(func(as *engine.Steps) { as.WaitExternal() })
		po := other.Promise()
		root := engine.New(r)
		var info string
		root.Add(func(as *engine.Steps) {
			_, _ = po.Wait()
		}, func(as *engine.Steps, code string) {
			info = code + ": " + as.State().ErrorInfo
		})
		p := root.Promise()
		if r != rr {
			r.RunUntilIdle()
		}
		select {
		case <-p.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Wait inside a step deadlocked")
		}
		if !strings.HasPrefix(info, engine.InternalError+": ") || !strings.Contains(info, waitPanic) {
			t.Fatalf("handler saw %q", info)
		}
		other.Cancel()
		if r != rr {
			r.RunUntilIdle()
		}
		<-po.Done()
	}
}

// A failed flow's Wait gives a nil *Args whose methods work.
func TestWaitArgsOfFailedFlowIsNilSafe(t *testing.T) {
	r := reactor.NewManual()
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { as.Error("Boom") })
	p := root.Promise()
	r.RunUntilIdle()
	args, err := p.Wait()
	if err == nil {
		t.Fatal("want an error")
	}
	if args.Len() != 0 || args.At(0).Kind() != engine.KindNone || args.At(-1).Kind() != engine.KindNone {
		t.Fatal("nil *Args not empty")
	}
	var none *engine.Args
	if none.Len() != 0 {
		t.Fatal("nil *Args Len")
	}
}
