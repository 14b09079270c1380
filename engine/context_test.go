//go:build linux

package engine_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// A flow tied to a context: canceling the context cancels the flow (cancel
// handlers run, no error handler), its deadline fails it with Timeout, and
// a context done before the start ends the flow with no step run.
func TestContextTiesFlow(t *testing.T) {
	cases := []struct {
		name     string
		ctx      func() (context.Context, context.CancelFunc)
		cancelAt bool // cancel once the step waits
		code     string
		info     string
		ran      bool // the first step ran
	}{
		{"cancel", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			true, engine.Canceled, "context canceled", true},
		// The deadline passes once the step waits (deadlineAt), not
		// after a time: a 20 ms timeout passed before the first step ran
		// while the test's reactor waited for a CPU (load 25 on 2 cores),
		// and the flow ended at its start with no step run.
		{"deadline", deadlineAt, true, engine.Timeout, "context deadline exceeded", true},
		{"done before start", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, false, engine.Canceled, "context canceled", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reactortest.Start(t, reactor.Options{CPU: -1})
			ctx, cancel := c.ctx()
			defer cancel()
			waiting := make(chan struct{})
			var ran, canceled, handled bool
			var last error
			root := engine.New(r)
			root.SetContext(ctx)
			root.Add(func(as *engine.Steps) {
				ran = true
				as.SetCancel(func(*engine.Steps) { canceled = true })
				as.WaitExternal()
				close(waiting)
			}, func(as *engine.Steps, code string) { handled = true })
			root.Add(func(as *engine.Steps) { t.Error("the step after the waiting one ran") })
			p := root.Promise()
			if c.cancelAt {
				<-waiting
				cancel()
			}
			_, err := realWait(t, p, c.name)
			wantCode(t, err, c.code)
			if got := errInfo(err); got != c.info {
				t.Errorf("info %q, want %q", got, c.info)
			}
			onRealLoop(t, r, func() { last = root.State().LastException })
			if ran != c.ran || canceled != c.ran {
				t.Errorf("step ran %v, cancel handler ran %v; want both %v", ran, canceled, c.ran)
			}
			if handled {
				t.Error("an error handler ran")
			}
			if !errors.Is(last, ctx.Err()) {
				t.Errorf("LastException %v, want %v", last, ctx.Err())
			}
		})
	}
}

// deadlineAt returns a context whose deadline passes when its CancelFunc is
// called: Done closes and Err is context.DeadlineExceeded, as for a
// context.WithDeadline whose time has come, at the moment the test picks.
func deadlineAt() (context.Context, context.CancelFunc) {
	c := &passedDeadline{Context: context.Background(), done: make(chan struct{})}
	var once sync.Once
	return c, func() {
		once.Do(func() {
			c.at.Store(time.Now().UnixNano())
			close(c.done)
		})
	}
}

type passedDeadline struct {
	context.Context
	done chan struct{}
	at   atomic.Int64 // when the deadline passed (UnixNano), 0 before
}

// Deadline is an hour away until the deadline passes, then when it did.
func (c *passedDeadline) Deadline() (time.Time, bool) {
	if at := c.at.Load(); at != 0 {
		return time.Unix(0, at), true
	}
	return time.Now().Add(time.Hour), true
}
func (c *passedDeadline) Done() <-chan struct{} { return c.done }
func (c *passedDeadline) Err() error {
	if c.at.Load() != 0 {
		return context.DeadlineExceeded
	}
	return nil
}

// A flow that ends before its context is done is not touched by it later,
// and the root runs again under the same context.
func TestContextOutlivedByFlow(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	ctx, cancel := context.WithCancel(context.Background())
	root := engine.New(r)
	root.SetContext(ctx)
	for i := 0; i < 3; i++ {
		root.Add(func(as *engine.Steps) { as.Success(engine.Int(7)) })
		args, err := realWait(t, root.Promise(), "run")
		wantNoErr(t, err)
		if args.At(0).Int() != 7 {
			t.Fatalf("run %d: got %v", i, args.At(0))
		}
	}
	cancel()
	// Untie it: the canceled context no longer ends the next run.
	//lint:ignore SA1012 nil is SetContext's documented "no context": the root is untied
	root.SetContext(nil)
	root.Add(func(as *engine.Steps) { as.Success() })
	_, err := realWait(t, root.Promise(), "untied")
	wantNoErr(t, err)
}

type ctxKey struct{}

// AwaitFunc's context derives from the flow's: values reach fn, and the
// flow's cancellation reaches it.
func TestContextAwaitFuncDerives(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	defer cancel()
	started := make(chan struct{})
	var got any
	fnErr := make(chan error, 1)
	root := engine.New(r)
	root.SetContext(ctx)
	engine.AwaitFunc(root, func(ctx context.Context) (engine.Value, error) {
		got = ctx.Value(ctxKey{})
		close(started)
		<-ctx.Done()
		fnErr <- ctx.Err()
		return engine.Value{}, ctx.Err()
	})
	p := root.Promise()
	<-started
	cancel()
	_, err := realWait(t, p, "await")
	wantCode(t, err, engine.Canceled)
	if got != "v" {
		t.Errorf("ctx value %v, want v", got)
	}
	// fn's goroutine sees the cancel.
	select {
	case err := <-fnErr:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("AwaitFunc's context ended with %v", err)
		}
	case <-time.After(reactortest.Hang):
		t.Error("AwaitFunc's context was not canceled")
	}
}

// Context without SetContext is Background; SetContext on an executing root
// is a misuse (dropped off the loop: the running flow keeps its context).
func TestContextDefault(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	root := engine.New(r)
	if root.Context() != context.Background() {
		t.Error("Context without SetContext is not Background")
	}
	var inStep context.Context
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root.SetContext(ctx)
	if root.Context() != ctx {
		t.Error("a root's Context is not the one set")
	}
	root.Add(func(as *engine.Steps) { inStep = as.Context() })
	_, err := realWait(t, root.Promise(), "run")
	wantNoErr(t, err)
	if inStep != ctx {
		t.Error("a step's Context is not the flow's")
	}
}

// WaitContext gives up when its context is done, leaving the flow running,
// and returns the flow's result otherwise.
func TestPromiseWaitContext(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1})
	root := engine.New(r)
	var ext engine.External
	waiting := make(chan struct{})
	root.Add(func(as *engine.Steps) { ext = as.External(); close(waiting) })
	p := root.Promise()
	<-waiting
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.WaitContext(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitContext on a done context: %v, want context.Canceled", err)
	}
	if !root.Executing() {
		t.Fatal("WaitContext ended the flow")
	}
	ext.Success(engine.Int(3))
	args, err := p.WaitContext(context.Background())
	wantNoErr(t, err)
	if args.At(0).Int() != 3 {
		t.Fatalf("got %v", args.At(0))
	}
}
