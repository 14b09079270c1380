//go:build linux

package reactor

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/asyncsteps/asyncsteps/internal/goid"
	"golang.org/x/sys/unix"
)

// runParkedOrPost is how engine's Execute offers a start: RunParked, and
// PostRun where it declines.
func runParkedOrPost(r *Reactor, cb func(unsafe.Pointer, uint64)) bool {
	return X.RunParked(r, cb, nil, 0) || X.PostRun(r, cb, nil, 0)
}

// RunParked from an ordinary goroutine to a parked loop runs the task
// before it returns, on the caller, as the loop, counted once in
// TasksRun; what the task leaves runs too: its local post before
// RunParked returns (the rest of the turn), its timer on time and its
// watched descriptor's callback once the loop has its word back.
func TestRunParkedRunsOnTheCallerWhenParked(t *testing.T) {
	r := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	type seen struct {
		g           uintptr
		same, loopG bool
	}
	at := func() seen { return seen{goid.Current(), r.IsSameThread(), r.IsLoopGoroutine()} }
	ran := make(chan seen, 1)
	local := make(chan seen, 1)
	fired := make(chan seen, 1)
	readable := make(chan seen, 1)
	var armedAt time.Time
	onRead := func(unsafe.Pointer, int, Event) {
		var buf [8]byte
		_, _ = unix.Read(p[0], buf[:])
		_ = r.Unwatch(p[0])
		_ = unix.Close(p[0])
		readable <- at()
	}
	task := func(unsafe.Pointer, uint64) {
		armedAt = time.Now()
		r.xAfter(20*time.Millisecond, func(unsafe.Pointer, uint64) { fired <- at() }, nil, 0)
		if err := r.xWatch(p[0], InterestRead, onRead, nil); err != nil {
			t.Error(err)
		}
		r.xPost(func(unsafe.Pointer, uint64) { local <- at() }, nil, 0) // on the loop: queued locally
		ran <- at()
	}
	var m0, m1 Metrics
	onLoop(r, func() { m0 = r.LoopMetrics() })
	waitParked(t, r)
	if !X.RunParked(r, task, nil, 0) {
		t.Fatal("RunParked declined a parked, open reactor with nothing queued")
	}
	me := goid.Current()
	for name, ch := range map[string]chan seen{"task": ran, "its local post": local} {
		select {
		case s := <-ch:
			if s.g != me || !s.same || !s.loopG {
				t.Fatalf("%s: on the caller %v, IsSameThread %v, IsLoopGoroutine %v; want all true", name, s.g == me, s.same, s.loopG)
			}
		default:
			t.Fatalf("RunParked returned before %s ran", name)
		}
	}
	if r.IsSameThread() || r.IsLoopGoroutine() {
		t.Fatal("after RunParked the caller still counts as the loop")
	}
	if s := <-fired; !s.same || !s.loopG || s.g == me {
		t.Fatalf("timer: IsSameThread %v, IsLoopGoroutine %v, on the caller %v", s.same, s.loopG, s.g == me)
	}
	if time.Since(armedAt) < 20*time.Millisecond {
		t.Fatal("the timer fired early")
	}
	if _, err := unix.Write(p[1], []byte{1}); err != nil {
		t.Fatal(err)
	}
	if s := <-readable; !s.same || !s.loopG {
		t.Fatal("the I/O callback did not run as the loop")
	}
	onLoop(r, func() { m1 = r.LoopMetrics() })
	// RunParked's task and one of the two onLoop tasks (its local post
	// is the loop's own: not TasksRun).
	if got := m1.TasksRun - m0.TasksRun; got != 2 {
		t.Fatalf("TasksRun grew by %d, want 2 (RunParked's task and an onLoop's)", got)
	}
}

// RunParked declines, running nothing, wherever PostRun would not run
// the task directly: a manual reactor, a running loop, a closed reactor,
// an OwnThread one, a ring with work queued, a caller inside an assist.
func TestRunParkedDeclines(t *testing.T) {
	var ran atomic.Int32
	cb := func(unsafe.Pointer, uint64) { ran.Add(1) }
	busy := startLoop(t, Options{CPU: -1})
	queued := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	own := startLoop(t, Options{CPU: -1, OwnThread: true})
	a := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	b := startLoop(t, Options{CPU: -1, Spin: NoSpin})
	cases := []struct {
		name string
		try  func() bool
	}{
		{"manual", func() bool { return X.RunParked(NewManual(), cb, nil, 0) }},
		{"closed", func() bool { return X.RunParked(closedAfterParking(t), cb, nil, 0) }},
		{"own thread", func() bool {
			waitParked(t, own)
			return X.RunParked(own, cb, nil, 0)
		}},
		{"running", func() bool {
			in, release := make(chan struct{}), make(chan struct{})
			busy.xPost(func(unsafe.Pointer, uint64) { close(in); <-release }, nil, 0)
			<-in
			defer close(release)
			return X.RunParked(busy, cb, nil, 0)
		}},
		{"ring not empty", func() bool {
			waitParked(t, queued)
			pushQuiet(t, queued, func(unsafe.Pointer, uint64) {})
			defer X.Wake(queued)
			return X.RunParked(queued, cb, nil, 0)
		}},
		{"inside an assist", func() bool {
			waitParked(t, a)
			waitParked(t, b)
			var got, assisted bool
			pushQuiet(t, a, func(unsafe.Pointer, uint64) { got = X.RunParked(b, cb, nil, 0) })
			if assisted = a.Assist(); !assisted {
				X.Wake(a)
				t.Log("the loop woke before the assist: the case ran on the loop")
			}
			return got
		}},
	}
	for _, c := range cases {
		if c.try() {
			t.Errorf("%s: RunParked ran the task", c.name)
		}
		if n := ran.Swap(0); n != 0 {
			t.Errorf("%s: the task ran %d times", c.name, n)
		}
	}
}

// A task RunParked (or RunParkedP, its copy with a result) runs that
// panics, panics with nil, exits its goroutine or whose PanicHandler
// panics in turn: the panic goes to the handler (the task counts as run;
// RunParkedP's result is nil), or on to the caller; either way the word
// and the assist slot go back, and the loop takes the next post. A task
// that returns gives RunParkedP's caller its result.
func TestRunParkedPanicsGiveTheWordBack(t *testing.T) {
	cases := []struct {
		name     string
		handler  func(v any)
		task     func()
		handled  any  // what the handler must get; nil: not called
		escapes  bool // the panic reaches the caller
		exits    bool // the goroutine exits
		returned bool // the task returns: no panic
	}{
		{name: "panic", task: func() { panic("boom") }, handled: "boom"},
		{name: "panic nil", task: func() { panic(nil) }, handled: new(runtime.PanicNilError)},
		{name: "handler panics", handler: func(v any) { panic(v) }, task: func() { panic("boom") }, escapes: true},
		{name: "Goexit", task: runtime.Goexit, exits: true},
		{name: "returns", task: func() {}, returned: true},
	}
	sentinel := new(int)
	for _, withResult := range []bool{false, true} {
		for _, c := range cases {
			name := c.name
			if withResult {
				name = "P/" + name
			}
			t.Run(name, func(t *testing.T) {
				got := make(chan any, 1)
				h := c.handler
				if h == nil {
					h = func(v any) { got <- v }
				}
				r := startLoop(t, Options{CPU: -1, Spin: NoSpin, PanicHandler: h})
				waitParked(t, r)
				type result struct {
					g                   uintptr
					direct, ok, returns bool
					recovered           any
					res                 unsafe.Pointer
				}
				res := make(chan result, 1)
				go func() {
					me := goid.Current()
					out := result{g: me}
					defer func() {
						out.recovered = recover()
						res <- out
					}()
					if withResult {
						var p unsafe.Pointer
						p, out.ok = X.RunParkedP(r, func(unsafe.Pointer, uint64) unsafe.Pointer {
							out.direct = goid.Current() == me
							c.task()
							return unsafe.Pointer(sentinel)
						}, nil, 0)
						out.res = p
					} else {
						out.ok = X.RunParked(r, func(unsafe.Pointer, uint64) {
							out.direct = goid.Current() == me
							c.task()
						}, nil, 0)
					}
					out.returns = true
				}()
				out := <-res
				if !out.direct {
					t.Skip("the loop woke first: not the path under test")
				}
				switch {
				case c.exits:
					if out.returns {
						t.Fatal("RunParked returned after its task exited the goroutine")
					}
				case c.escapes:
					if out.recovered != "boom" || out.returns {
						t.Fatalf("the handler's panic did not reach the caller: %v", out.recovered)
					}
				case c.returned:
					if !out.returns || !out.ok || out.recovered != nil {
						t.Fatalf("RunParked: returned %v, reported %v, panicked %v; want true, true, nothing", out.returns, out.ok, out.recovered)
					}
					if withResult && out.res != unsafe.Pointer(sentinel) {
						t.Fatalf("RunParkedP's result %p, want the task's %p", out.res, sentinel)
					}
				default:
					if !out.returns || !out.ok || out.recovered != nil {
						t.Fatalf("RunParked: returned %v, reported %v, panicked %v; want true, true, nothing", out.returns, out.ok, out.recovered)
					}
					if out.res != nil {
						t.Fatalf("RunParkedP's result %p after its task panicked, want nil", out.res)
					}
					v := <-got
					if _, isNil := c.handled.(*runtime.PanicNilError); isNil {
						if _, ok := v.(*runtime.PanicNilError); !ok {
							t.Fatalf("the PanicHandler got %T, want *runtime.PanicNilError", v)
						}
					} else if v != c.handled {
						t.Fatalf("the PanicHandler got %v, want %v", v, c.handled)
					}
				}
				if g := r.loopG.Load(); g == out.g {
					t.Fatal("the caller still holds the loop word")
				}
				for i := range assistants {
					if assistants[i].Load() == out.g {
						t.Fatalf("assist slot %d still holds the caller", i)
					}
				}
				if n := nAway.Load(); n != 0 {
					t.Fatalf("nAway %d after the turn", n)
				}
				onLoop(r, func() {}) // the loop goes on
			})
		}
	}
}

// Close racing goroutines that start work through RunParked (PostRun
// where it declines): every accepted task runs exactly once, Run returns
// nil, nothing hangs.
func TestRunParkedRacingClose(t *testing.T) {
	racingClose(t, Options{CPU: -1}, runParkedOrPost)
}

// Many goroutines starting work through RunParked on one reactor at once,
// each start offered once the loop has parked (so that they contend for
// its word): callbacks run one at a time under the loop word, each
// exactly once.
func TestRunParkedManyGoroutinesOneAtATime(t *testing.T) {
	if forcePolling {
		t.Skip("the Polling fallback never parks: nothing to run in its place")
	}
	startersOneAtATime(t, startLoop(t, Options{CPU: -1}), 8, 300, func(r *Reactor, cb func(unsafe.Pointer, uint64)) bool {
		for !X.Parked(r) {
			runtime.Gosched() // so that the starts meet a parked loop, the path under test
		}
		return runParkedOrPost(r, cb)
	})
}
