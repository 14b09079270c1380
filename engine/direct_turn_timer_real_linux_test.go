//go:build linux

package engine_test

import (
	"errors"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/reactor"
	"golang.org/x/sys/unix"
)

// A Promise from ordinary code on a parked real loop runs the loop's turn
// on the caller (PostRun's direct turn); when the flow it starts arms a
// timer (SetTimeout) and waits, the turn must arm the timerfd for it
// before it gives the word back, or the flow waits for the next unrelated
// wake-up. Each round's flow must end with Timeout; the 10 s guard only
// turns a hang into a failure.
func TestDirectTurnFlowArmsTimer(t *testing.T) {
	if pollingFallback {
		t.Skip("the Polling fallback never parks: Execute never runs a turn")
	}
	r, err := reactor.New(reactor.Options{CPU: -1, Spin: reactor.NoSpin})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- r.Run() }()
	defer func() {
		_ = r.Close()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}()
	for round := 0; round < 20; round++ {
		root := engine.New(r)
		done := make(chan string, 1)
		root.Add(func(as *engine.Steps) {
			as.SetTimeout(time.Millisecond)
			as.WaitExternal()
		}, func(as *engine.Steps, code string) {
			done <- code
			as.Success()
		})
		for deadline := time.Now().Add(10 * time.Second); !reactor.X.Parked(r); {
			if time.Now().After(deadline) {
				t.Fatal("the loop never parked")
			}
			runtime.Gosched()
		}
		// Execute, not Promise().Wait(): a waiter that assists the loop
		// would run a full turn of its own and arm the timer for it.
		root.Execute()
		select {
		case code := <-done:
			if code != engine.Timeout {
				t.Fatalf("round %d: %s, want Timeout", round, code)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the flow's 1 ms timeout never fired", round)
		}
	}
}

// timedWatch is what a step that arms a timer and then watches a pipe
// keeps for its callbacks.
type timedWatch struct {
	r     *reactor.Reactor
	rd    int
	wr    int
	x     engine.External
	fired chan bool // the timer's callback ran, as the loop
}

// A flow started from an ordinary goroutine on a parked loop (Execute:
// reactor.X.PostRun, whose direct turn runs the first step on the caller)
// arms a timer and then watches a descriptor. Nothing but the loop's own
// timerfd can fire that timer: the caller waits on a channel the flow's
// last step writes, never on a Promise (whose Wait would assist the loop
// and arm the timer itself). The timer's callback writes the pipe, the
// watch reports it, and the flow ends with what it read. Then the same
// with a step timeout and no I/O: the timeout must fire. Each shape also
// runs with a far timer already armed on the parked loop, so that the
// direct turn must move the timerfd earlier, not find it armed.
func TestDirectTurnArmsTimerThenIO(t *testing.T) {
	if pollingFallback {
		t.Skip("the Polling fallback never parks: Execute never runs a turn")
	}
	for _, far := range []bool{false, true} {
		g, err := reactor.NewGroup(1, reactor.Options{})
		if err != nil {
			t.Fatal(err)
		}
		g.Start()
		r := g.Next()
		if far {
			h := r.Deferred(time.Hour, func() {}) // the loop arms its timerfd for it
			defer r.Cancel(h)
		}
		onCaller := 0
		for i := range 10 {
			var p [2]int
			if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
				t.Fatal(err)
			}
			w := &timedWatch{r: r, rd: p[0], wr: p[1], fired: make(chan bool, 1)}
			me := goid.Current()
			done := make(chan any, 1)
			root := engine.New(r)
			root.Add(func(as *engine.Steps) {
				if goid.Current() == me {
					onCaller++
				}
				w.x = as.External()
				// The timer first (it writes the pipe), then the watch.
				reactor.X.After(w.r, 5*time.Millisecond, func(p unsafe.Pointer, _ uint64) {
					w := (*timedWatch)(p)
					w.fired <- w.r.IsSameThread()
					_, _ = unix.Write(w.wr, []byte{7})
				}, unsafe.Pointer(w), 0)
				err := reactor.WatchTo(as.Reactor(), w.rd, reactor.InterestRead, func(w *timedWatch, fd int, _ reactor.Event) {
					var b [1]byte
					n, _ := unix.Read(fd, b[:])
					_ = w.r.Unwatch(fd)
					if n != 1 {
						w.x.Error(engine.InternalError, "nothing to read")
						return
					}
					w.x.Success(engine.Int(int64(b[0])))
				}, w)
				if err != nil {
					as.Error(engine.InternalError, err.Error())
				}
			}, func(as *engine.Steps, code string) { done <- errors.New(code) })
			root.Add(func(as *engine.Steps) { done <- as.Arg(0).Int() })
			waitIdle(t, r)
			root.Execute()
			select {
			case v := <-done:
				if v != int64(7) {
					t.Fatalf("far %v, flow %d: ended with %v, want 7 read from the pipe", far, i, v)
				}
			case <-time.After(10 * time.Second): // a hang, not a timing: the timer was never armed
				t.Fatalf("far %v, flow %d: the timer armed in the caller's turn never fired", far, i)
			}
			if same := <-w.fired; !same {
				t.Fatalf("far %v, flow %d: the timer fired off the loop", far, i)
			}
			root.Release()
			_ = unix.Close(p[0])
			_ = unix.Close(p[1])

			// A step timeout and nothing else: only the timer ends the flow.
			root = engine.New(r)
			root.Add(func(as *engine.Steps) {
				as.SetTimeout(5 * time.Millisecond)
				as.WaitExternal()
			}, func(as *engine.Steps, code string) { done <- code })
			waitIdle(t, r)
			root.Execute()
			select {
			case v := <-done:
				if v != engine.Timeout {
					t.Fatalf("far %v, flow %d: ended with %v, want Timeout", far, i, v)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("far %v, flow %d: a step timeout set in the caller's turn never fired", far, i)
			}
			root.Release()
		}
		g.Close()
		if onCaller == 0 {
			t.Fatalf("far %v: no first step ran on its caller: the direct turn was never taken", far)
		}
		t.Logf("far %v: %d of 10 timed steps ran on their callers", far, onCaller)
	}
}

// waitIdle waits until r's loop is parked (reactor.X.Parked), so that
// the next Execute runs its turn on the caller.
func waitIdle(t *testing.T, r *reactor.Reactor) {
	t.Helper()
	for i := 0; !reactor.X.Parked(r); i++ {
		if i > 1e7 {
			t.Fatal("the loop never parked")
		}
		runtime.Gosched()
	}
}
