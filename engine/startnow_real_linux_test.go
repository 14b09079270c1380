//go:build linux

package engine_test

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/internal/goid"
	"github.com/asyncsteps/asyncsteps/internal/reactortest"
	"github.com/asyncsteps/asyncsteps/reactor"
	"golang.org/x/sys/unix"
)

// A root executed from an ordinary goroutine on a reactor whose loop is
// parked starts on the caller, under the loop word (reactor.X.RunParked,
// engine's startRootNow), and runs to its first wait or its end before
// Execute returns. These tests drive that path on real reactors under
// -race.

// startParked waits until r's loop is parked (reactor.X.Parked), where an
// Execute from this goroutine takes the direct start, unless the
// scheduler wakes the loop in between (the tests' assertions hold on
// either path). The Polling fallback never parks: it returns at once.
func startParked(r *reactor.Reactor) {
	if pollingFallback {
		return
	}
	deadline := time.Now().Add(reactortest.Hang)
	for !reactor.X.Parked(r) && time.Now().Before(deadline) {
		runtime.Gosched()
	}
}

// The flow runs on the caller, as the loop (IsSameThread and
// IsLoopGoroutine), and has ended when Promise (its Execute) returns; the
// caller is no loop after it.
func TestExecuteOnParkedLoopRunsOnTheCaller(t *testing.T) {
	r := reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin})
	direct := 0
	for i := range 50 {
		startParked(r)
		me := goid.Current()
		var onCaller, same, loopG bool
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			onCaller = goid.Current() == me
			same, loopG = as.Reactor().IsSameThread(), as.Reactor().IsLoopGoroutine()
			as.Success(engine.Int(int64(i)))
		})
		p := root.Promise()
		args, err := p.Wait()
		if err != nil || args.At(0).Int() != int64(i) {
			t.Fatalf("flow %d: %v %v", i, args, err)
		}
		if !same || !loopG {
			t.Fatalf("flow %d ran without the loop word: IsSameThread %v, IsLoopGoroutine %v", i, same, loopG)
		}
		if r.IsSameThread() || r.IsLoopGoroutine() {
			t.Fatal("after Execute the caller still counts as the loop")
		}
		if onCaller {
			direct++
		}
		root.Release()
	}
	t.Logf("%d of 50 flows ran on the caller", direct)
}

// Flows started on parked loops that arm timers and watch a descriptor
// from the caller's goroutine: the timers fire and the I/O callbacks run
// (the turn re-arms the timerfd; the watch is the loop's), each flow ends
// with its own value, and misuse (Wait inside a step for a flow that has
// not ended) still panics in the step.
func TestExecuteOnParkedLoopTimersIOAndMisuse(t *testing.T) {
	rs := []*reactor.Reactor{
		reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin}),
		reactortest.Start(t, reactor.Options{CPU: -1, Spin: reactor.NoSpin}),
	}
	// A flow on each reactor that does not end until the test says so:
	// the one the misuse Wait targets.
	pending := map[*reactor.Reactor]*engine.Promise{}
	exts := map[*reactor.Reactor]chan engine.External{}
	for _, r := range rs {
		ch := make(chan engine.External, 1)
		root := engine.New(r)
		root.Add(func(as *engine.Steps) { ch <- as.External() })
		pending[r] = root.Promise()
		exts[r] = ch
	}
	const n = 200
	var misuseMissed atomic.Int32
	for i := range n {
		r := rs[i%2]
		startParked(r)
		root := engine.New(r)
		root.Add(func(as *engine.Steps) {
			switch i % 4 {
			case 0: // misuse: Wait as the loop for a flow that has not ended
				func() {
					defer func() {
						if s, _ := recover().(string); !strings.Contains(s, waitPanic) {
							misuseMissed.Add(1)
						}
					}()
					_, _ = pending[as.Reactor()].Wait()
				}()
				as.Success(engine.Int(int64(i)))
			case 1: // a timer armed by whoever runs this step ends it
				x := as.External()
				as.Reactor().Deferred(time.Millisecond, func() { x.Success(engine.Int(int64(i))) })
			case 2: // I/O: a pipe watched as the loop, written at once
				var p [2]int
				if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
					as.Error("pipe", err.Error())
					return
				}
				w := &nowPipe{x: as.External(), r: as.Reactor(), v: i, fds: p}
				nowPipes.Store(w, struct{}{})
				if err := reactor.X.Watch(as.Reactor(), p[0], reactor.InterestRead, onNowPipe, unsafe.Pointer(w)); err != nil {
					as.Error("watch", err.Error())
					return
				}
				_, _ = unix.Write(p[1], []byte{1})
			default:
				as.Success(engine.Int(int64(i)))
			}
		})
		args, err := root.Promise().Wait()
		if err != nil || args.At(0).Int() != int64(i) {
			t.Fatalf("flow %d: %v %v", i, args, err)
		}
		root.Release()
	}
	if k := misuseMissed.Load(); k != 0 {
		t.Fatalf("%d misuse Waits inside a flow started on the caller did not panic", k)
	}
	for _, r := range rs {
		(<-exts[r]).Success()
		if _, err := pending[r].Wait(); err != nil {
			t.Fatal(err)
		}
	}
}

// nowPipe is one flow's watched pipe (TestExecuteOnParkedLoopTimersIOAndMisuse),
// kept reachable in nowPipes while the loop holds its pointer.
type nowPipe struct {
	x   engine.External
	r   *reactor.Reactor
	v   int
	fds [2]int
}

var nowPipes sync.Map

func onNowPipe(arg unsafe.Pointer, fd int, _ reactor.Event) {
	w := (*nowPipe)(arg)
	var b [1]byte
	_, _ = unix.Read(fd, b[:])
	_ = w.r.Unwatch(fd)
	_ = unix.Close(w.fds[0])
	_ = unix.Close(w.fds[1])
	nowPipes.Delete(w)
	w.x.Success(engine.Int(int64(w.v)))
}

// Many goroutines start flows over two reactors at once, plain and with
// Promises, each waiting for its own: every result is the flow's own, and
// no two steps of one reactor ever overlap.
func TestExecuteOnParkedLoopManyGoroutines(t *testing.T) {
	rs := []*reactor.Reactor{
		reactortest.Start(t, reactor.Options{CPU: -1}),
		reactortest.Start(t, reactor.Options{CPU: -1}),
	}
	var inside [2]atomic.Int32
	var overlaps atomic.Int32
	const goroutines, n = 8, 300
	var wg sync.WaitGroup
	errs := make(chan string, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan int64, 1)
			for i := range n {
				k := (g + i) % 2
				v := int64(g*1_000_000 + i)
				root := engine.New(rs[k])
				root.Add(func(as *engine.Steps) {
					if inside[k].Add(1) != 1 || !as.Reactor().IsSameThread() {
						overlaps.Add(1)
					}
					inside[k].Add(-1)
					if i%2 == 1 {
						done <- v // a plain flow's caller waits on its own channel
					}
					as.Success(engine.Int(v))
				})
				if i%2 == 1 {
					root.Execute()
					if got := <-done; got != v {
						errs <- "a plain flow reported another's value"
						return
					}
				} else if args, err := root.Promise().Wait(); err != nil || args.At(0).Int() != v {
					errs <- "a flow read another's result or failed"
					return
				}
				root.Release()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if o := overlaps.Load(); o != 0 {
		t.Fatalf("%d steps overlapped on one reactor or ran off its word", o)
	}
}

// Close racing goroutines that start flows (on the caller while the loop
// is parked): every Promise ends (its flow ran, was canceled by the
// shutdown, or was refused with "reactor closed"), none hangs, and every
// root can be released.
func TestExecuteOnParkedLoopCloseRaces(t *testing.T) {
	for range 5 {
		r, ran := reactortest.StartRun(t, reactor.Options{CPU: -1})
		const goroutines, n = 4, 200
		var wg sync.WaitGroup
		start := make(chan struct{})
		hung := make(chan int, goroutines)
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := range n {
					root := engine.New(r)
					root.Add(func(as *engine.Steps) { as.Success(engine.Int(1)) })
					p := root.Promise()
					select {
					case <-p.Done():
					case <-time.After(reactortest.Hang): // a hang guard, not a timing
						hung <- i
						return
					}
					if _, err := p.Wait(); err != nil {
						var e *engine.Error
						if !errors.As(err, &e) || (e.Code != engine.InternalError && e.Code != engine.Canceled) {
							t.Errorf("flow %d: %v", i, err)
						}
					}
					root.Release()
				}
			}()
		}
		close(start)
		reactortest.CloseAndWait(t, r, ran)
		wg.Wait()
		close(hung)
		for i := range hung {
			t.Fatalf("flow %d never ended after Close", i)
		}
	}
}
