package engine

import (
	"runtime"
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// A step that ends its goroutine (runtime.Goexit: t.FailNow in a step
// does) leaves through drive1's deferred function without a panic to
// recover. The flow it ran cannot go on, but the engine must not keep
// what that exit left behind: the next flow driven on the same reactor,
// by another goroutine, runs its steps as if nothing had happened (no
// InternalError raised by a callback that returned normally, no frame of
// the dead flow settled in its place).
func TestGoexitLeavesNoRaise(t *testing.T) {
	r := reactor.NewManual()
	dead := New(r)
	dead.Add(func(*Steps) { runtime.Goexit() })
	dead.Execute()
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		r.RunUntilIdle()
	}()
	<-exited

	// RunReady from a loop callback still runs the flows it started: the
	// Goexit left the engine not "running its flows".
	now := New(r)
	ranNow := false
	var got bool
	r.Immediate(func() {
		now.Add(func(*Steps) { ranNow = true })
		now.Execute()
		got = RunReady(r)
		if !ranNow {
			t.Error("RunReady from a loop callback did not run the flow it readied, after a Goexit")
		}
	})
	r.RunUntilIdle()
	_ = got

	root := New(r)
	var codes []string
	ran := 0
	root.Add(func(*Steps) { ran++ }, func(_ *Steps, code string) { codes = append(codes, code) })
	root.Add(func(*Steps) { ran++ })
	root.Execute()
	r.RunUntilIdle()
	if len(codes) != 0 || ran != 2 {
		t.Fatalf("after another goroutine's step called Goexit: error handler saw %q, %d of 2 steps ran", codes, ran)
	}

	// A raise after it is the raise, not the dead flow's panic.
	boom := New(r)
	boom.Add(func(as *Steps) { as.Error("Boom", "") }, func(_ *Steps, code string) { codes = append(codes, code) })
	boom.Execute()
	r.RunUntilIdle()
	if len(codes) != 1 || codes[0] != "Boom" {
		t.Fatalf("a raise after the Goexit reached its handler as %q, want [Boom]", codes)
	}
	// And a panic is still the flow's InternalError, with its value.
	codes = codes[:0]
	p := New(r)
	p.Add(func(*Steps) { panic("pow") }, func(_ *Steps, code string) { codes = append(codes, code) })
	p.Execute()
	r.RunUntilIdle()
	if len(codes) != 1 || codes[0] != InternalError {
		t.Fatalf("a panic after the Goexit reached its handler as %q, want [InternalError]", codes)
	}
	if st := p.State(); st == nil || st.ErrorInfo != "pow" {
		t.Fatalf("the panic's value not recorded: %+v", st)
	}

}
