//go:build linux

package engine_test

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/reactor"
	"golang.org/x/sys/unix"
)

// pipeWatch is what a step watching a pipe keeps for its I/O callback.
type pipeWatch struct {
	fd int
	x  engine.External
}

// A flow whose first step runs on its caller (Execute finds the loop
// parked) and watches a descriptor there: the watch is the loop's, so the
// byte written after Execute returns wakes the loop, whose callback, run
// as the loop, ends the step with what it read.
func TestExecuteFromAGoroutineWatchesADescriptor(t *testing.T) {
	if pollingFallback {
		t.Skip("the Polling fallback never parks: Execute never runs a turn")
	}
	g, err := reactor.NewGroup(1, reactor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer g.Close()
	r := g.Next()
	onCaller := 0
	for i := range 20 {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		me := goid.Current()
		w := &pipeWatch{fd: p[0]}
		done := make(chan int64, 1)
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			if goid.Current() == me {
				onCaller++
			}
			w.x = as.External()
			err := reactor.WatchTo(as.Reactor(), w.fd, reactor.InterestRead, func(w *pipeWatch, fd int, _ reactor.Event) {
				if !r.IsSameThread() {
					w.x.Error(engine.InternalError, "the I/O callback ran off the loop")
					return
				}
				var b [1]byte
				n, _ := unix.Read(fd, b[:])
				_ = r.Unwatch(fd)
				if n != 1 {
					w.x.Error(engine.InternalError, "nothing to read")
					return
				}
				w.x.Success(engine.Int(int64(b[0])))
			}, w)
			if err != nil {
				as.Error(engine.InternalError, err.Error())
			}
		}, nil)
		root.Add(func(as *engine.Steps) { done <- as.Arg(0).Int() })
		// The loop spins a while after the callback that woke it: on a
		// loaded machine every one of 20 calls could find it awake.
		startParked(r)
		p1 := root.Promise()
		if _, err := unix.Write(p[1], []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := p1.Wait(); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got := <-done; got != int64(i) {
			t.Fatalf("call %d: read %d", i, got)
		}
		root.Release()
		_ = unix.Close(p[0])
		_ = unix.Close(p[1])
	}
	if onCaller == 0 {
		t.Fatal("no watching step ran on its caller: Execute never ran a parked loop's turn")
	}
	t.Logf("%d of 20 watching steps ran on their callers", onCaller)
}
