//go:build linux

package engine_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// batchWait waits for b with a hang guard.
func batchWait(t *testing.T, b *engine.Batch, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); b.Wait() }()
	select {
	case <-done:
	case <-time.After(reactortest.Hang):
		t.Fatalf("%s: Batch.Wait did not return (deadlock or lost wake-up?)", what)
	}
}

// batchRun runs b (Execute and Wait, Run's way) with a hang guard.
func batchRun(t *testing.T, b *engine.Batch, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); b.Run() }()
	select {
	case <-done:
	case <-time.After(reactortest.Hang):
		t.Fatalf("%s: Batch.Run did not return (deadlock or lost wake-up?)", what)
	}
}

func startGroup(t *testing.T, n int) *reactor.Group {
	t.Helper()
	g, err := reactor.NewGroup(n, reactor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	})
	return g
}

// A Batch over a group, reused for several sets: every flow's result comes
// back at its index, successes, errors and flows that end on a timer
// (Wait then sleeps) alike, and the roots are reused after Release.
func TestBatchResultsOnGroup(t *testing.T) {
	g := startGroup(t, 2)
	var b engine.Batch
	const n = 300
	roots := make([]*engine.Steps, n)
	for round := range 4 {
		for i := range n {
			roots[i] = engine.New(g.Next())
			v := int64(round*n + i)
			switch i % 3 {
			case 0:
				roots[i].Add(func(as *engine.Steps) { as.Success(engine.Int(v)) })
			case 1:
				roots[i].Add(func(as *engine.Steps) { as.Error("Boom", fmt.Sprint(v)) })
			default:
				// Ends on a timer of the loop: the set is still running
				// when Wait starts.
				roots[i].Add(func(as *engine.Steps) {
					ext := as.External()
					as.Reactor().Deferred(time.Millisecond, func() { ext.Success(engine.Int(v)) })
				})
			}
			if got := b.Add(roots[i]); got != i {
				t.Fatalf("round %d: Add returned %d, want %d", round, got, i)
			}
		}
		if b.Len() != n {
			t.Fatalf("Len = %d, want %d", b.Len(), n)
		}
		if round%2 == 0 {
			b.Execute()
			batchWait(t, &b, "round")
		} else {
			batchRun(t, &b, "round (Run)")
		}
		for i := range n {
			v := int64(round*n + i)
			args, err := b.Result(i)
			if i%3 == 1 {
				if err == nil || !strings.Contains(err.Error(), "Boom") || errInfo(err) != fmt.Sprint(v) {
					t.Fatalf("round %d, flow %d: err %v, want Boom: %d", round, i, err, v)
				}
				continue
			}
			if err != nil || args.Len() != 1 || args.At(0).Int() != v {
				t.Fatalf("round %d, flow %d: %v %v, want %d", round, i, args, err, v)
			}
		}
		for _, r := range roots {
			r.Release()
		}
	}
	if _, err := b.Result(n); err == nil {
		t.Fatal("Result out of range: no error")
	}
}

// Roots that cannot run are not run, and report why; a root canceled while
// its flow waits reports Canceled; the set's other flows are unaffected.
func TestBatchRootsThatCannotRun(t *testing.T) {
	g := startGroup(t, 2)
	r := g.Reactors()[0]
	busy := engine.New(r)
	busy.Add(func(as *engine.Steps) { as.WaitExternal() })
	p := busy.Promise()
	defer func() { busy.Cancel(); <-p.Done(); busy.Release() }()

	waiting := engine.New(g.Reactors()[1])
	started := make(chan struct{})
	waiting.Add(func(as *engine.Steps) { as.WaitExternal(); close(started) })
	ok := engine.New(r)
	ok.Add(func(as *engine.Steps) { as.Success(engine.Str("ok")) })
	twice := engine.New(r)
	twice.Add(func(as *engine.Steps) { as.Success() })

	var b engine.Batch
	iNil := b.Add(nil)
	iBusy := b.Add(busy)
	iWaiting := b.Add(waiting)
	iOK := b.Add(ok)
	iTwice1 := b.Add(twice)
	iTwice2 := b.Add(twice)
	b.Execute()
	<-started
	waiting.Cancel()
	batchWait(t, &b, "set")
	want := map[int]string{iNil: "not a root", iBusy: "executing", iTwice2: "executing"}
	for i, info := range want {
		if _, err := b.Result(i); err == nil || !strings.Contains(errInfo(err), info) {
			t.Errorf("entry %d: err %v, want InternalError about %q", i, err, info)
		}
	}
	if _, err := b.Result(iWaiting); err == nil || !strings.HasPrefix(err.Error(), engine.Canceled) {
		t.Errorf("canceled root: err %v, want Canceled", err)
	}
	if args, err := b.Result(iOK); err != nil || args.At(0).Str() != "ok" {
		t.Errorf("ok root: %v %v", args, err)
	}
	if _, err := b.Result(iTwice1); err != nil {
		t.Errorf("first add of a root twice: %v", err)
	}
	for _, root := range []*engine.Steps{waiting, ok, twice} {
		root.Release()
	}
}

// rootOnClosedReactor returns a root (one step that succeeds) made on a
// real reactor that has run and been closed since.
func rootOnClosedReactor(t *testing.T) *engine.Steps {
	t.Helper()
	r, err := reactor.New(reactor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- r.Run() }()
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { as.Success() })
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	<-ran
	return root
}

// A Batch on a closed reactor ends its roots with InternalError at once;
// an empty set and a set of roots that all fail to start return from Wait.
func TestBatchClosedAndEmpty(t *testing.T) {
	var b engine.Batch
	b.Execute()
	batchWait(t, &b, "empty set")

	root := rootOnClosedReactor(t)
	b.Add(root)
	b.Add(nil)
	b.Execute()
	batchWait(t, &b, "closed reactor")
	if _, err := b.Result(0); err == nil || !strings.Contains(errInfo(err), "reactor closed") {
		t.Fatalf("closed reactor: %v, want InternalError reactor closed", err)
	}
	root.Release()
}

// Waiting for a set on the loop of one of its reactors would deadlock:
// Wait panics with a message that says so. A Batch executed on a loop
// starts that loop's roots directly, and waiting for it elsewhere works.
func TestBatchWaitOnLoopPanics(t *testing.T) {
	g := startGroup(t, 1)
	r := g.Reactors()[0]
	var b engine.Batch
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { as.Success(engine.Int(7)) })
	var msg any
	onRealLoop(t, r, func() {
		b.Add(root)
		b.Execute()
		func() {
			defer func() { msg = recover() }()
			b.Wait()
		}()
	})
	if s, _ := msg.(string); !strings.Contains(s, "Batch.Wait on the loop") {
		t.Fatalf("Wait on the loop: recovered %v, want the deadlock panic", msg)
	}
	batchWait(t, &b, "after the refused wait")
	if args, err := b.Result(0); err != nil || args.At(0).Int() != 7 {
		t.Fatalf("result: %v %v", args, err)
	}
	root.Release()
}

// Misuse outside any flow panics with a message that names it.
func TestBatchMisusePanics(t *testing.T) {
	r := reactor.NewManual()
	var b engine.Batch
	root := engine.New(r)
	root.Add(func(as *engine.Steps) { as.WaitExternal() })
	b.Add(root)
	b.Execute()
	for name, fn := range map[string]func(){
		"Execute twice":     b.Execute,
		"Add after Execute": func() { b.Add(engine.New(r)) },
	} {
		func() {
			defer func() {
				if s, _ := recover().(string); !strings.Contains(s, "Batch.") {
					t.Errorf("%s: recovered %q, want a Batch panic", name, s)
				}
			}()
			fn()
		}()
	}
	if _, err := b.Result(0); err == nil {
		t.Error("Result before Wait: no error")
	}
	r.RunUntilIdle()
	root.Cancel()
	r.RunUntilIdle()
	b.Wait()
	if _, err := b.Result(0); err == nil || !strings.HasPrefix(err.Error(), engine.Canceled) {
		t.Errorf("canceled: %v", err)
	}
	root.Release()
}

// Many goroutines, each with its own Batch, fan out over one group at
// once; every result is its own flow's.
func TestBatchManyGoroutines(t *testing.T) {
	g := startGroup(t, 2)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b engine.Batch
			roots := make([]*engine.Steps, 64)
			for round := range 20 {
				for i := range roots {
					v := int64(w<<20 | round<<10 | i)
					roots[i] = engine.New(g.Next())
					roots[i].Add(func(as *engine.Steps) { as.Success(engine.Int(v)) })
					b.Add(roots[i])
				}
				if (w+round)%2 == 0 {
					b.Execute()
					b.Wait()
				} else {
					b.Run()
				}
				for i := range roots {
					v := int64(w<<20 | round<<10 | i)
					if args, err := b.Result(i); err != nil || args.At(0).Int() != v {
						errs <- fmt.Errorf("worker %d round %d flow %d: %v %v, want %d", w, round, i, args, err, v)
						return
					}
					roots[i].Release()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// Run on a closed reactor and on an empty set returns; on a manual
// reactor driven by another goroutine it waits for the drive.
func TestBatchRunEdges(t *testing.T) {
	var b engine.Batch
	batchRun(t, &b, "empty set")

	root := rootOnClosedReactor(t)
	b.Add(root)
	batchRun(t, &b, "closed reactor")
	if _, err := b.Result(0); err == nil || !strings.Contains(errInfo(err), "reactor closed") {
		t.Fatalf("closed reactor: %v", err)
	}
	root.Release()

	m := reactor.NewManual()
	mroot := engine.New(m)
	mroot.Add(func(as *engine.Steps) { as.Success(engine.Int(3)) })
	b.Add(mroot)
	done := make(chan struct{})
	go func() { defer close(done); b.Run() }()
	for {
		m.RunUntilIdle()
		select {
		case <-done:
		case <-time.After(time.Millisecond):
			continue
		}
		break
	}
	if args, err := b.Result(0); err != nil || args.At(0).Int() != 3 {
		t.Fatalf("manual: %v %v", args, err)
	}
	mroot.Release()
}
