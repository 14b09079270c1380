//go:build linux

package reactor_test

import (
	"fmt"
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

// TestGroup walks one group through its life; each subtest needs the ones
// before it (a started group, then a closed one).
func TestGroup(t *testing.T) {
	g0 := runtime.NumGoroutine()
	fd0 := leakcheck.FDs(t)
	g, err := reactor.NewGroup(2, reactor.Options{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	rs := g.Reactors()
	t.Run("two distinct members", func(t *testing.T) {
		if g.Len() != 2 || len(rs) != 2 {
			t.Fatalf("Len %d, Reactors %d; want 2", g.Len(), len(rs))
		}
		if rs[0] == rs[1] || rs[0] == nil || rs[1] == nil {
			t.Fatal("group reactors not distinct")
		}
	})
	g.Start()

	t.Run("Next is round-robin from many goroutines", func(t *testing.T) {
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
	})
	t.Run("Next alternates", func(t *testing.T) {
		a, b, c := g.Next(), g.Next(), g.Next()
		if a == b || a != c {
			t.Fatal("Next does not alternate between the two reactors")
		}
	})
	t.Run("Current off every loop is nil", func(t *testing.T) {
		if c := g.Current(); c != nil {
			t.Fatalf("Current on the test goroutine = %p, want nil", c)
		}
	})
	for i, r := range rs {
		t.Run(fmt.Sprintf("Current in reactor %d's callback and timer is that reactor", i), func(t *testing.T) {
			inCallback, inTimer := make(chan *reactor.Reactor, 1), make(chan *reactor.Reactor, 1)
			r.Immediate(func() { inCallback <- g.Current() })
			r.Deferred(time.Millisecond, func() { inTimer <- g.Current() })
			for what, ch := range map[string]chan *reactor.Reactor{"callback": inCallback, "timer": inTimer} {
				select {
				case c := <-ch:
					if c != r {
						t.Errorf("Current in a %s = %p, want %p", what, c, r)
					}
				case <-time.After(reactortest.Hang):
					t.Fatalf("the %s did not run", what)
				}
			}
		})
		t.Run(fmt.Sprintf("Current on a goroutine started by reactor %d's callback is nil", i), func(t *testing.T) {
			out := make(chan *reactor.Reactor, 1)
			r.Immediate(func() { go func() { out <- g.Current() }() })
			select {
			case c := <-out:
				if c != nil {
					t.Fatalf("Current = %p, want nil", c)
				}
			case <-time.After(reactortest.Hang):
				t.Fatal("the callback did not run")
			}
		})
	}

	t.Run("Close closes every member", func(t *testing.T) {
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
	})
	t.Run("Close again is nil", func(t *testing.T) {
		if err := g.Close(); err != nil {
			t.Fatalf("second Group.Close = %v", err)
		}
	})
	t.Run("Current after Close is nil", func(t *testing.T) {
		if c := g.Current(); c != nil {
			t.Fatalf("Current after Close = %p, want nil", c)
		}
	})
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
