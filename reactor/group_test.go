//go:build linux

package reactor_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asyncsteps/asyncsteps/internal/leakcheck"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
)

func TestGroupRoundRobinCurrentClose(t *testing.T) {
	g0 := runtime.NumGoroutine()
	fd0 := leakcheck.FDs(t)
	g, err := reactor.NewGroup(2, reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	if g.Len() != 2 || len(g.Reactors()) != 2 {
		t.Fatalf("Len %d, Reactors %d; want 2", g.Len(), len(g.Reactors()))
	}
	rs := g.Reactors()
	if rs[0] == rs[1] || rs[0] == nil || rs[1] == nil {
		t.Fatal("group reactors not distinct")
	}
	g.Start()

	// Next: round-robin over both, from many goroutines at once.
	var counts [2]atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 1000; j++ {
				switch g.Next() {
				case rs[0]:
					counts[0].Add(1)
				case rs[1]:
					counts[1].Add(1)
				default:
					t.Error("Next returned a reactor outside the group")
				}
			}
		}()
	}
	wg.Wait()
	if counts[0].Load() != 4000 || counts[1].Load() != 4000 {
		t.Fatalf("Next spread %d/%d over 8000 calls, want 4000/4000", counts[0].Load(), counts[1].Load())
	}
	a, b, c := g.Next(), g.Next(), g.Next()
	if a == b || a != c {
		t.Fatal("Next does not alternate between the two reactors")
	}

	// Current: the reactor whose loop calls it; nil elsewhere.
	if g.Current() != nil {
		t.Fatal("Current on the test goroutine is not nil")
	}
	for i, r := range rs {
		got := make(chan *reactor.Reactor, 2)
		r.Immediate(func() {
			got <- g.Current()
			go func() { got <- g.Current() }()
		})
		r.Deferred(time.Millisecond, func() { got <- g.Current() })
		for k := 0; k < 3; k++ {
			select {
			case c := <-got:
				if k == 1 || k == 2 {
					// order of the goroutine's and the timer's answers varies
					if c != nil && c != r {
						t.Fatalf("reactor %d: Current = another reactor", i)
					}
					continue
				}
				if c != r {
					t.Fatalf("reactor %d: Current inside its callback = %p, want %p", i, c, r)
				}
			case <-time.After(reactortest.Hang):
				t.Fatalf("reactor %d: callbacks did not run", i)
			}
		}
	}
	// Precisely: a goroutine started by a callback is not the loop.
	for i, r := range rs {
		in, out := make(chan *reactor.Reactor, 1), make(chan *reactor.Reactor, 1)
		r.Immediate(func() {
			in <- g.Current()
			ch := make(chan *reactor.Reactor)
			go func() { ch <- g.Current() }()
			out <- <-ch
		})
		if c := <-in; c != r {
			t.Fatalf("reactor %d: Current inside callback wrong", i)
		}
		if c := <-out; c != nil {
			t.Fatalf("reactor %d: Current on a goroutine started by a callback = %p, want nil", i, c)
		}
	}

	if err := g.Close(); err != nil {
		t.Fatalf("Group.Close = %v", err)
	}
	for i, r := range rs {
		if !r.Closed() {
			t.Fatalf("reactor %d not closed", i)
		}
		if h := r.Immediate(func() {}); !h.IsZero() {
			t.Fatalf("reactor %d accepts work after Group.Close", i)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatalf("second Group.Close = %v", err)
	}
	if g.Current() != nil {
		t.Fatal("Current after Close is not nil")
	}
	assertNoLeaks(t, fd0, g0)
}

func TestGroupCloseWithoutStart(t *testing.T) {
	fd0 := leakcheck.FDs(t)
	g, err := reactor.NewGroup(3, reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close without Start = %v", err)
		}
	case <-time.After(reactortest.Hang):
		t.Fatal("Close without Start blocked")
	}
	if fd := leakcheck.FDs(t); fd != fd0 {
		t.Fatalf("fds: %d before NewGroup, %d after Close", fd0, fd)
	}
}

func TestGroupPinsEachReactor(t *testing.T) {
	ncpu := runtime.NumCPU()
	if ncpu < 2 {
		t.Skip("needs 2 CPUs")
	}
	g, err := reactor.NewGroup(2, reactor.Options{CPU: 1, Pin: true})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer g.Close()
	for i, r := range g.Reactors() {
		want := (1 + i) % ncpu
		got := make(chan unix.CPUSet, 1)
		r.Immediate(func() {
			var s unix.CPUSet
			_ = unix.SchedGetaffinity(0, &s)
			got <- s
		})
		select {
		case s := <-got:
			if s.Count() != 1 || !s.IsSet(want) {
				t.Fatalf("reactor %d: affinity has %d CPUs, CPU %d set = %v; want only CPU %d", i, s.Count(), want, s.IsSet(want), want)
			}
		case <-time.After(reactortest.Hang):
			t.Fatal("callback did not run")
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}

// Start then Close at once (a loop goroutine may not have reached Run yet):
// Close returns nil, every time.
func TestGroupCloseRightAfterStart(t *testing.T) {
	for i := 0; i < 50; i++ {
		g, err := reactor.NewGroup(2, reactor.Options{CPU: -1})
		if err != nil {
			t.Fatal(err)
		}
		g.Start()
		if err := g.Close(); err != nil {
			t.Fatalf("round %d: Group.Close right after Start = %v", i, err)
		}
	}
}

// The same with one reactor: go r.Run(); r.Close(). Run returns nil
// whichever of the two gets there first.
func TestRealCloseRacingRun(t *testing.T) {
	for i := 0; i < 50; i++ {
		r, err := reactor.New(reactor.Options{CPU: -1})
		if err != nil {
			t.Fatal(err)
		}
		runErr := make(chan error, 1)
		go func() { runErr <- r.Run() }()
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-runErr:
			if err != nil {
				t.Fatalf("round %d: Run = %v after a Close that raced it", i, err)
			}
		case <-time.After(reactortest.Hang):
			t.Fatal("Run did not return")
		}
	}
}
